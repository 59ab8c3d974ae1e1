// Building elements for every page the service serves: the learner pages (bundled into
// vendor/learn/learn.js) and the dashboard (served as vendor/dom.js, an ES module it imports).
// Elements are made with createElement and every string becomes a text node, never markup:
// learner ids and code, exercise text and server messages can never turn into HTML here.

const SVG_NS = "http://www.w3.org/2000/svg";

// el("p", { class, text, dataset, onclick, ...attributes }, ...children): false, null and
// undefined leave an attribute or a child out; true gives an empty attribute; arrays of
// children are flattened.
export function el(tag, props, ...children) {
  return build(document.createElement(tag), props, children);
}

export function svg(tag, props, ...children) {
  return build(document.createElementNS(SVG_NS, tag), props, children);
}

function build(node, props, children) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.setAttribute("class", value);
    else if (name === "text") node.textContent = String(value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  return append(node, children);
}

export function append(node, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

// An id unique on the page, for aria-labelledby, label for= and aria-controls.
let counter = 0;
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}
