// Built by frontend/build.mjs (make static) from frontend/src/dom.js: edit the source, not this file.

// src/dom.js
var SVG_NS = "http://www.w3.org/2000/svg";
function el(tag, props, ...children) {
  return build(document.createElement(tag), props, children);
}
function svg(tag, props, ...children) {
  return build(document.createElementNS(SVG_NS, tag), props, children);
}
function build(node, props, children) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === void 0 || value === null || value === false) continue;
    if (name === "class") node.setAttribute("class", value);
    else if (name === "text") node.textContent = String(value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  return append(node, children);
}
function append(node, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === void 0 || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}
function clear(node) {
  node.replaceChildren();
  return node;
}
var counter = 0;
function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}
export {
  append,
  clear,
  el,
  svg,
  uid
};
