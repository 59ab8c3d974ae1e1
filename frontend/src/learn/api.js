// The public API, called with the learner token. Every answer is read as JSON; an error answer is
// application/problem+json (title, detail, errors), turned into one sentence for the learner.

export class ApiError extends Error {
  constructor(status, problem) {
    super(problemText(status, problem));
    this.status = status;
    this.problem = problem || {};
  }
}

export function problemText(status, problem) {
  if (!problem) return `The server answered ${status}.`;
  const parts = [problem.detail || problem.title || `The server answered ${status}.`];
  for (const error of problem.errors || []) parts.push(`${error.field}: ${error.message}`);
  return parts.join(" ");
}

export function makeApi(base, session) {
  async function call(method, path, { body, headers = {}, signal } = {}) {
    const token = session.token;
    const init = { method, headers: { Accept: "application/json", ...headers }, credentials: "omit", signal, cache: "no-store" };
    if (token) init.headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path.startsWith("/") || path.startsWith("http") ? path : `${base}/${path}`, init);
    } catch (error) {
      if (error.name === "AbortError") throw error;
      throw new ApiError(0, { detail: "The server could not be reached: check the connection and try again." });
    }
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    if (response.status === 401 && token && session.token === token) session.end("refused");
    if (!response.ok) throw new ApiError(response.status, data);
    return { status: response.status, data, headers: response.headers };
  }
  return { base, call };
}
