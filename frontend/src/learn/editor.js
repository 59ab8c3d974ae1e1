// The code editor: CodeMirror 6 with Python highlighting, line numbers, and Tab / Shift-Tab to
// indent (indentWithTab). Tab then no longer leaves the editor, so the keyboard escape is
// CodeMirror's own: press Escape, then Tab (or Shift-Tab) moves focus out; Ctrl-M (Shift-Alt-M on a
// Mac) switches Tab between indenting and moving focus. The page says so beside each editor.

import { EditorState } from "@codemirror/state";
import {
  EditorView, drawSelection, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { bracketMatching, defaultHighlightStyle, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { python } from "@codemirror/lang-python";

const theme = EditorView.theme({
  "&": { fontSize: "15px", border: "1px solid #767676", borderRadius: "6px", backgroundColor: "#fff" },
  "&.cm-focused": { outline: "3px solid #1a5fb4", outlineOffset: "2px" },
  ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace", minHeight: "12rem",
    maxHeight: "70vh", lineHeight: "1.5" },
  ".cm-content": { padding: "6px 0" },
  ".cm-gutters": { backgroundColor: "#f4f4f4", color: "#595959", borderRight: "1px solid #ddd" },
  ".cm-activeLine": { backgroundColor: "#eef4fb" },
  ".cm-activeLineGutter": { backgroundColor: "#dde7f3", color: "#1d1d1f" },
});

// Typing or deleting over a selection that spans lines: Chrome's own editing would merge the lines'
// elements and put an inline style attribute on the merged text, which the page's policy refuses
// (harmlessly, but as an error on the console). CodeMirror makes the same change from its state.
const replaceMultiLineSelection = EditorView.domEventHandlers({
  beforeinput(event, view) {
    const sel = view.state.selection;
    const main = sel.main;
    if (event.isComposing || sel.ranges.length > 1 || main.empty) return false;
    if (view.state.doc.lineAt(main.from).number === view.state.doc.lineAt(main.to).number) return false;
    let insert;
    if (event.inputType === "insertText" && typeof event.data === "string") insert = event.data;
    else if (event.inputType.startsWith("delete")) insert = "";
    else return false;
    event.preventDefault();
    view.dispatch(view.state.replaceSelection(insert), { scrollIntoView: true, userEvent: insert ? "input.type" : "delete.selection" });
    return true;
  },
});

// The editor lives in a shadow root of `host`: CodeMirror styles itself from JavaScript, and in a
// shadow root it does so with constructed stylesheets (adoptedStyleSheets), which the page's
// Content-Security-Policy (style-src 'self', no inline <style>) allows; in the document itself it
// would add a <style> element, which that policy blocks. An id reference cannot cross into a
// shadow root, so the editor is named by `label` (the text of the visible label beside it).
// `language` (default: Python) and `extensions` are the dashboard's authoring editor's (authoring/editor.js).
export function createEditor(host, { doc, label, onChange, language = python(), extensions = [] }) {
  const root = host.attachShadow({ mode: "open" });
  return new EditorView({
    parent: root,
    root,
    state: EditorState.create({
      doc,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        highlightActiveLine(),
        indentUnit.of("    "),
        language,
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        theme,
        replaceMultiLineSelection,
        extensions,
        // tabindex: the content is focusable already (contenteditable); saying so lets a checker see
        // that a scrolled editor (long lines on a phone) is reached and scrolled by the keyboard.
        EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged && onChange) onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
}

export function setCode(view, code) {
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: code } });
}

export function getCode(view) {
  return view.state.doc.toString();
}

export const KEYBOARD_NOTE = "Tab and Shift-Tab indent in the editor. To leave it with the keyboard, press Escape, then Tab.";
