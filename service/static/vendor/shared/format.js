// Built by frontend/build.mjs (make static) from frontend/src/format.js: edit the source, not this file.

// src/format.js
function percent(fraction, digits = 0) {
  if (fraction === null || fraction === void 0) return "—";
  const scale = 10 ** digits;
  return `${Math.round(Number(fraction) * (100 * scale)) / scale}%`;
}
function num(value) {
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return String(value);
  return String(Number(value.toPrecision(6)));
}
function values(value) {
  if (Array.isArray(value)) return `[${value.map(values).join(", ")}]`;
  if (value === null) return "None";
  return num(value);
}
export {
  num,
  percent,
  values
};
