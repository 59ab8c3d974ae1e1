// Numbers as people read them, on every page the service serves: the learner pages (bundled into
// vendor/learn/learn.js) and the dashboard (served as vendor/format.js, an ES module it imports).

// A fraction as a percentage: percent(0.8) "80%", percent(0.1234, 1) "12.3%", "—" for no value.
// Rounded half up at `digits` decimals, with no trailing zeros (percent(0.5, 1) is "50%").
export function percent(fraction, digits = 0) {
  if (fraction === null || fraction === undefined) return "—";
  const scale = 10 ** digits;
  return `${Math.round(Number(fraction) * (100 * scale)) / scale}%`;
}

// A number short, without float noise (0.30000000000000004 -> 0.3).
export function num(value) {
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return String(value);
  return String(Number(value.toPrecision(6)));
}

// A value the grader sent (a number, a list of them, nested, or None) as Python writes it.
export function values(value) {
  if (Array.isArray(value)) return `[${value.map(values).join(", ")}]`;
  if (value === null) return "None";
  return num(value);
}
