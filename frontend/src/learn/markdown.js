// Exercise text (prompts, hints, choices, feedback, explanations) is Markdown. markdown-it renders it
// with raw HTML off (an HTML tag in the text is shown as text), DOMPurify keeps only the elements and
// attributes below and returns DOM nodes, and Python code blocks are highlighted by CodeMirror's own
// parser into spans. No markup string is ever assigned to the page.

import MarkdownIt from "markdown-it";
import DOMPurify from "dompurify";
import { highlightCode, classHighlighter } from "@lezer/highlight";
import { pythonLanguage } from "@codemirror/lang-python";

const md = new MarkdownIt({ html: false, linkify: false, typographer: false });

// Headings in exercise text sit under the page's own h1 and h2.
const headingShift = 2;
md.renderer.rules.heading_open = (tokens, idx) => `<h${Math.min(6, Number(tokens[idx].tag.slice(1)) + headingShift)}>`;
md.renderer.rules.heading_close = (tokens, idx) => `</h${Math.min(6, Number(tokens[idx].tag.slice(1)) + headingShift)}>`;

const PURIFY = {
  ALLOWED_TAGS: ["p", "em", "strong", "code", "pre", "ul", "ol", "li", "a", "blockquote", "h3", "h4", "h5", "h6",
    "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "s", "del", "span"],
  ALLOWED_ATTR: ["href", "class", "start", "title"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#|\/(?!\/)|\.{0,2}\/?[\w-])/i,
  RETURN_DOM_FRAGMENT: true,
};

function highlightPython(fragment) {
  for (const code of fragment.querySelectorAll("pre > code.language-python, pre > code.language-py")) {
    const text = code.textContent;
    const out = document.createDocumentFragment();
    highlightCode(text, pythonLanguage.parser.parse(text), classHighlighter,
      (piece, classes) => {
        if (!classes) out.append(piece);
        else {
          const span = document.createElement("span");
          span.className = classes;
          span.textContent = piece;
          out.append(span);
        }
      },
      () => out.append("\n"));
    code.replaceChildren(out);
  }
  return fragment;
}

export function markdown(text) {
  return highlightPython(DOMPurify.sanitize(md.render(String(text ?? "")), PURIFY));
}

export function markdownInline(text) {
  return DOMPurify.sanitize(md.renderInline(String(text ?? "")), PURIFY);
}

// A block element holding rendered Markdown.
export function markdownBlock(text, className = "md") {
  const div = document.createElement("div");
  div.className = className;
  div.append(markdown(text));
  return div;
}
