// The dashboard's file editor (its authoring view, service/static/admin/views/authoring.js): the
// learner page's CodeMirror 6 (learn/editor.js: the same theme, keys and shadow root), with the
// language of each file (Python, or TOML for exercise.toml), a way to move to a line, and markers on
// the lines a proof found at fault. Built as an ES module into vendor/authoring/editor.js.

import { RangeSetBuilder, StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView } from "@codemirror/view";
import { LanguageSupport, StreamLanguage } from "@codemirror/language";
import { python } from "@codemirror/lang-python";
import { createEditor, getCode, setCode, KEYBOARD_NOTE } from "../learn/editor.js";

export { getCode, setCode, KEYBOARD_NOTE };

// TOML, enough to read an exercise.toml: comments, [tables], keys, strings (""" blocks included),
// numbers and booleans.
const toml = new LanguageSupport(StreamLanguage.define({
  name: "toml",
  startState: () => ({ inMultiline: false }),
  token(stream, state) {
    if (state.inMultiline) {
      if (stream.skipTo('"""')) {
        stream.match('"""');
        state.inMultiline = false;
      } else stream.skipToEnd();
      return "string";
    }
    if (stream.eatSpace()) return null;
    if (stream.match('"""')) {
      state.inMultiline = true;
      return "string";
    }
    const ch = stream.peek();
    if (ch === "#") {
      stream.skipToEnd();
      return "comment";
    }
    if (stream.sol() && ch === "[") {
      stream.skipToEnd();
      return "heading";
    }
    if (ch === '"' || ch === "'") {
      stream.next();
      let escaped = false;
      for (let next = stream.next(); next !== undefined; next = stream.next()) {
        if (next === ch && !escaped) break;
        escaped = ch === '"' && next === "\\" && !escaped;
      }
      return "string";
    }
    if (stream.match(/^(true|false)\b/)) return "bool";
    if (stream.match(/^[+-]?(\d[\d_]*)(\.\d+)?([eE][+-]?\d+)?/)) return "number";
    if (stream.match(/^[A-Za-z0-9_-]+(?=\s*=)/)) return "propertyName";
    stream.next();
    return null;
  },
}));

// The proof's problems on the lines they name: a line marker (class cm-problem-line), set anew at
// each proof.
const setProblems = StateEffect.define();
const problemLines = StateField.define({
  create: () => Decoration.none,
  update(lines, tr) {
    lines = lines.map(tr.changes);
    for (const effect of tr.effects) {
      if (!effect.is(setProblems)) continue;
      const builder = new RangeSetBuilder();
      const numbers = [...new Set(effect.value)].filter((n) => n >= 1 && n <= tr.state.doc.lines).sort((a, b) => a - b);
      for (const n of numbers) {
        const line = tr.state.doc.line(n);
        builder.add(line.from, line.from, Decoration.line({ class: "cm-problem-line" }));
      }
      lines = builder.finish();
    }
    return lines;
  },
  provide: (field) => EditorView.decorations.from(field),
});

const problemTheme = EditorView.theme({
  // Over the active line's colour too (the cursor is put on the line at fault).
  ".cm-line.cm-problem-line": { backgroundColor: "#fde8e8", boxShadow: "inset 4px 0 0 #b3261e" },
});

/** An editor of one file of an exercise in `host`: Python for *.py, TOML for *.toml, else plain text. */
export function createFileEditor(host, { path, doc, label, onChange }) {
  const language = path.endsWith(".py") ? python() : path.endsWith(".toml") ? toml : [];
  // exercise.toml holds prose (the prompt, hints, feedback): its long lines wrap; code does not.
  const wrap = path.endsWith(".py") ? [] : [EditorView.lineWrapping];
  return createEditor(host, { doc, label, onChange, language, extensions: [problemLines, problemTheme, wrap] });
}

/** Mark these line numbers (1-based) as at fault; [] clears the marks. */
export function markProblemLines(view, lines) {
  view.dispatch({ effects: setProblems.of(lines) });
}

/** Put the cursor at the start of a line (1-based), show it and focus the editor. */
export function goToLine(view, number) {
  const n = Math.min(Math.max(1, number || 1), view.state.doc.lines);
  const line = view.state.doc.line(n);
  view.dispatch({ selection: { anchor: line.from }, effects: EditorView.scrollIntoView(line.from, { y: "center" }) });
  view.focus();
}
