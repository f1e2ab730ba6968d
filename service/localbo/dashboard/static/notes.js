// Notes (issue 27, item 6): what a person wrote on a study or a trial ("sample 17 was contaminated").
// Read: GET .../notes (the study's note and every trial's, re-read when the study's event stream says its
// notes_version changed) and GET .../access (whether this viewer's token may write). Written with a
// write-scoped token: PUT .../note, PUT .../trials/N/note; an empty note clears it.

import { AuthError, get, put } from "./api.js";
import { html } from "./html.js";

export const MAX_NOTE = 2000; // characters, as the API takes them

// GET .../notes, or null when it cannot be read (the page goes on without notes)
export function readNotes(path, signal) {
  return get(`${path}/notes`, { signal }).catch(() => null);
}

// a read of the notes into the study page's model: study.note, study.notes ({number: text}), study.notesVersion
export function applyNotes(study, read) {
  if (!read) return;
  study.note = read.note ?? null;
  study.notes = read.trials ?? {};
  study.notesVersion = read.notes_version;
}

// whether this viewer may write notes on the study (false when it cannot tell)
export function mayWrite(path, signal) {
  return get(`${path}/access`, { signal }).then((a) => a.write === true, () => false);
}

export const saveStudyNote = (path, note) => put(`${path}/note`, { note });
export const saveTrialNote = (path, number, note) => put(`${path}/trials/${number}/note`, { note });

// A note's text, wrapped as written (line breaks kept)
export const noteText = (note, testid) => html`<span class="note-text" data-testid="${testid}">${note}</span>`;

// The editor: a labelled text box with Save and Cancel, and a status line for a refusal
export function noteForm({ id, label, value, testid }) {
  return html`<form class="note-form" data-testid="${testid}">
    <label for="${id}">${label}</label>
    <textarea id="${id}" name="note" rows="3" maxlength="${MAX_NOTE}">${value ?? ""}</textarea>
    <div class="note-actions"><button type="submit">Save note</button><button type="button" data-cancel>Cancel</button><span class="dim">at most ${MAX_NOTE} characters; empty clears it</span></div>
    <p class="note-status" role="status" data-testid="note-status"></p>
  </form>`;
}

// Wires an editor: save(text) is awaited (then done()), Cancel or Escape call done(); a refusal stays on screen
export function wireNoteForm(form, { save, done }) {
  const box = form.querySelector("textarea");
  const status = form.querySelector("[data-testid=note-status]");
  box.focus();
  box.setSelectionRange(box.value.length, box.value.length);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = "saving…";
    try {
      await save(box.value);
      done();
    } catch (error) {
      status.textContent =
        error instanceof AuthError && error.status === 403
          ? "Not saved: this token may read this study but not write notes on it."
          : `Not saved: ${error?.detail || error?.message || error}`;
    }
  });
  form.querySelector("[data-cancel]").addEventListener("click", () => done());
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") done();
  });
}
