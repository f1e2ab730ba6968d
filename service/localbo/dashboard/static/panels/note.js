// The study's note at the top of its page (issue 27, item 6), with an editor when this viewer's token may write
// (GET .../access); nothing at all when there is no note and the viewer may only read.

import { html, render } from "../html.js";
import { mayWrite, noteForm, noteText, saveStudyNote, wireNoteForm } from "../notes.js";

export function mount(el, study) {
  let editing = false;
  let shown = null;
  mayWrite(study.path, study.signal).then((write) => {
    study.canWrite = write;
    study.rerender();
  });
  const draw = () => {
    const key = JSON.stringify([study.note ?? null, study.canWrite === true, editing]);
    if (key === shown) return;
    shown = key;
    const note = study.note ?? null;
    el.hidden = !note && !study.canWrite;
    if (editing) {
      render(el, noteForm({ id: "study-note-input", label: "Note on this study", value: note, testid: "study-note-form" }));
      wireNoteForm(el.querySelector("form"), {
        async save(text) {
          const saved = await saveStudyNote(study.path, text);
          study.note = saved.note;
          study.notesVersion = saved.notes_version;
        },
        done() {
          editing = false;
          draw();
          el.querySelector("button")?.focus();
        },
      });
      return;
    }
    const edit = study.canWrite
      ? html` <button type="button" class="link" data-edit>${note ? "edit note" : "add a note to this study"}</button>`
      : "";
    render(el, html`${note ? html`<b>Note:</b> ${noteText(note, "study-note")}` : ""}${edit}`);
    el.querySelector("[data-edit]")?.addEventListener("click", () => {
      editing = true;
      draw();
    });
  };
  return { render: draw };
}
