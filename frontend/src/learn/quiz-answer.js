// A quiz exercise's answer (single or multiple choice, short answer, numeric): its form, Submit,
// and the grade. Each kind's form is { element, read() -> {value} or {problem, focus}, write(answer), focus() }.

import { el, clear, uid } from "../dom.js";
import { percent } from "../format.js";
import { markdownInline } from "./markdown.js";
import { renderQuizGrade, reveal } from "./results.js";
import { postAttempt, section } from "./common.js";

// A choice's text from its id (the grade's feedback names choices by id).
export function choiceTextOf(detail) {
  return (id) => {
    const choice = (detail.choices || []).find((c) => c.id === id);
    return choice ? markdownInline(choice.text) : id;
  };
}

function choiceForm(detail) {
  const element = el("form", { class: "quiz", novalidate: true });
  const name = uid("answer");
  const single = detail.kind === "single_choice";
  const inputs = [];
  const fieldset = el("fieldset", {}, el("legend", {}, single ? "Choose one answer" : "Choose every answer that is right"));
  for (const choice of detail.choices || []) {
    const id = uid("choice");
    const input = el("input", { type: single ? "radio" : "checkbox", name, id, value: choice.id });
    inputs.push(input);
    fieldset.append(el("div", { class: "choice" }, input, el("label", { for: id }, markdownInline(choice.text))));
  }
  element.append(fieldset);
  return {
    element,
    read() {
      const picked = inputs.filter((i) => i.checked).map((i) => i.value);
      if (single) return picked.length ? { value: picked[0] } : { problem: "Choose an answer first.", focus: inputs[0] };
      return { value: picked };
    },
    write(answer) {
      const picked = new Set([answer].flat().map(String));
      for (const input of inputs) input.checked = picked.has(input.value);
    },
    focus() {
      (inputs.find((i) => i.checked) || inputs[0])?.focus();
    },
  };
}

function shortAnswerForm() {
  const element = el("form", { class: "quiz", novalidate: true });
  const name = uid("answer");
  const id = uid("short");
  const input = el("input", { type: "text", id, name, autocomplete: "off", spellcheck: "false" });
  element.append(el("label", { for: id, class: "label" }, "Your answer"), input);
  return {
    element,
    read: () => (input.value.trim() ? { value: input.value } : { problem: "Write an answer first.", focus: input }),
    write(answer) {
      input.value = answer ?? "";
    },
    focus: () => input.focus(),
  };
}

// A number as a learner may type it (a typographic minus too), or null.
function parseNumber(text) {
  const cleaned = text.trim().replace(/−/g, "-");
  return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(cleaned) ? Number(cleaned) : null;
}

// One number, or a list of answer_length numbers.
function numericForm(detail) {
  const element = el("form", { class: "quiz", novalidate: true });
  const count = detail.answer_length || 1;
  const fields = [];
  const group = count > 1 ? el("fieldset", {}, el("legend", {}, `Your answer: ${count} numbers, in order`)) : element;
  for (let i = 0; i < count; i += 1) {
    const id = uid("number");
    const input = el("input", { type: "text", inputmode: "decimal", id, autocomplete: "off", class: "number" });
    fields.push(input);
    group.append(el("div", { class: "number-field" },
      el("label", { for: id, class: count > 1 ? "" : "label" }, count > 1 ? `Number ${i + 1}` : "Your answer (a number)"), input));
  }
  if (group !== element) element.append(group);
  return {
    element,
    read() {
      const numbers = [];
      for (const [i, input] of fields.entries()) {
        const value = parseNumber(input.value);
        if (value === null || !Number.isFinite(value)) {
          return { problem: count > 1 ? `Number ${i + 1} is not a number (write it like -0.5 or 2).` : "Write a number, like -0.5 or 2.", focus: input };
        }
        numbers.push(value);
      }
      return { value: detail.answer_length ? numbers : numbers[0] };
    },
    write(answer) {
      const list = [answer].flat();
      fields.forEach((input, i) => {
        input.value = list[i] === undefined ? "" : String(list[i]);
      });
    },
    focus: () => fields[0].focus(),
  };
}

// The form of the exercise's kind, with restore(attempt) for the earlier attempts' button.
export function quizInput({ detail, status }) {
  const form = detail.kind === "single_choice" || detail.kind === "multiple_choice" ? choiceForm(detail)
    : detail.kind === "short_answer" ? shortAnswerForm() : numericForm(detail);
  return {
    ...form,
    restore(attempt) {
      form.write(attempt.answer);
      status.textContent = "That attempt's answer is back in the form.";
      form.focus();
    },
  };
}

// The "Your answer" section: the form, Submit, the status line and the grade.
export function quizAnswer({ api, detail, exercise, input, status, actions, afterSubmit }) {
  const submit = el("button", { type: "submit", class: "primary" }, "Submit");
  const resultBox = el("div", { class: "result", tabindex: "-1" });
  actions.add(submit, "submit");
  input.element.append(el("div", { class: "buttons" }, submit));
  input.element.addEventListener("submit", (event) => {
    event.preventDefault();
    const answer = input.read();
    if (answer.problem) {
      clear(resultBox); // an old grade never sits under the new answer's problem
      status.textContent = answer.problem;
      answer.focus?.focus();
      return;
    }
    actions.perform("Submit", status, async () => {
      clear(resultBox);
      status.textContent = "Submitting…";
      const data = await postAttempt(api, exercise, { answer: answer.value });
      resultBox.append(renderQuizGrade(data, choiceTextOf(detail)));
      reveal(resultBox);
      actions.showStanding(data.standing);
      status.textContent = `Graded: ${data.correct ? "correct" : "not quite"}, score ${percent(data.score ?? 0)}.`;
      afterSubmit(data); // the history takes the POST's answer (not awaited: the buttons come back at once)
    });
  });
  return section("Your answer", input.element, status, resultBox);
}
