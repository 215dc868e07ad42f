// Behaviour shared by every page. The Content-Security-Policy forbids inline event handlers
// (onchange="…"), so elements declare what they need with data attributes instead.
(function () {
  "use strict";
  // A form htmx has not processed yet — swapped in a moment ago, its hx- attributes read only
  // once htmx settles the swap — would submit natively and navigate away from the page (a
  // label's Withdraw pressed right after the row was swapped). Bubbling past the form with
  // nothing preventing it, such a submit is handed to htmx instead.
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (event.defaultPrevented || !(form instanceof HTMLFormElement)) return;
    if (!window.htmx || !(form.hasAttribute("hx-post") || form.hasAttribute("hx-get"))) return;
    if (form["htmx-internal-data"]) return; // processed: htmx chose to let it through
    event.preventDefault();
    window.htmx.process(form);
    window.htmx.trigger(form, "submit");
  });

  // <select data-autosubmit>: submit its form as soon as the choice changes.
  document.addEventListener("change", function (event) {
    const el = event.target;
    if (el instanceof HTMLElement && el.matches("[data-autosubmit]") && el.form) {
      el.form.requestSubmit ? el.form.requestSubmit() : el.form.submit();
    }
  });

  // Judge validation (table[data-labelling]): label with the keyboard. j/k (or the arrows)
  // move between the rows that take keys: those awaiting your label and those with a label of
  // yours you may still change. 1–9 choose that blocker, 0 "none" (a label, or a change of
  // yours); Backspace or Delete withdraws yours. Each is posted with htmx; then a row you
  // labelled afresh hands the focus to the next row awaiting a label, and a row you changed
  // or withdrew keeps it while it still takes keys.
  function awaiting() {
    return Array.from(document.querySelectorAll("table[data-labelling] tr[data-to-label]"));
  }
  function keyed() {
    return Array.from(document.querySelectorAll("table[data-labelling] tr[data-label-keys]"));
  }
  function move(from, step) {
    const rows = keyed();
    if (!rows.length) return;
    const at = from ? rows.indexOf(from) : -1;
    const next = rows[(at + step + rows.length) % rows.length] || rows[0];
    next.focus();
  }
  function press(row, key) {
    const button = row && row.querySelector('button[data-key="' + key + '"]');
    if (button) button.click();
    return Boolean(button);
  }
  document.addEventListener("keydown", function (event) {
    if (!document.querySelector("table[data-labelling]")) return;
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target instanceof HTMLElement && target.matches("input, textarea, select, [contenteditable]")) return;
    const row = target instanceof HTMLElement ? target.closest("tr[data-label-keys]") : null;
    if (event.key === "j" || event.key === "ArrowDown") { event.preventDefault(); move(row, 1); return; }
    if (event.key === "k" || event.key === "ArrowUp") { event.preventDefault(); move(row, -1); return; }
    if (/^[0-9]$/.test(event.key)) {
      if (press(row || awaiting()[0], event.key)) event.preventDefault();
      return;
    }
    // Withdrawing takes the focused row only: never a label the focus is not on.
    if ((event.key === "Backspace" || event.key === "Delete") && press(row, "Backspace")) {
      event.preventDefault();
    }
  });
  // After a label's response has settled (its row and the progress card are swapped out of
  // band), the focus goes on (above). Which request settled is read from the event itself: a
  // flag set when the request starts was lost whenever another request started meanwhile.
  // The focus waits one task, after htmx's own settling.
  document.addEventListener("htmx:afterSettle", function (event) {
    const source = event.detail && event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!(source instanceof HTMLElement && source.matches(".label-buttons"))) return;
    setTimeout(function () {
      const same = source.dataset.then === "stay" && document.getElementById(source.dataset.row);
      if (same && same.matches("tr[data-label-keys]")) { same.focus(); return; }
      const rows = awaiting();
      if (rows.length && !rows.includes(document.activeElement)) rows[0].focus();
    }, 0);
  });

  // A form[data-question-queue] (judge validation's "Add question"): each submit takes the
  // text and its style, clears the box at once for the next one, and queues them; the queue
  // posts them one after the other (htmx, into #add-status), so none is lost however fast
  // they come, and each answer says it was added (its row appears) or why it was not.
  const queue = [];
  let sending = false;
  async function pump(form) {
    if (sending) return;
    sending = true;
    const status = form.querySelector("#add-status");
    try {
      while (queue.length) {
        const { text, style } = queue.shift();
        if (status) status.setAttribute("aria-busy", "true");
        try {
          // The status box as the source, not the form: htmx would check the form (its box,
          // emptied for the next question, is required) and send nothing. The form's values
          // (its CSRF token) still go with it; the queued text replaces the box's.
          await htmx.ajax("POST", form.action, {
            source: status, values: { text: text, style: style }, target: "#add-status",
            swap: "innerHTML",
          });
        } catch (error) {
          const p = document.createElement("p");
          p.className = "bad";
          p.dataset.queued = "refused";
          p.textContent = "“" + text.slice(0, 80) + "” was not sent (" + error + "): add it again.";
          if (status) status.replaceChildren(p);
        }
        form.dataset.pending = String(queue.length);
      }
    } finally {
      if (status) status.removeAttribute("aria-busy");
      sending = false;
    }
  }
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.matches("[data-question-queue]")) return;
    if (typeof htmx === "undefined") return; // no htmx: the form posts as it is
    event.preventDefault();
    const box = form.querySelector("textarea");
    const text = box ? box.value.trim() : "";
    if (!text) return;
    // The style chosen when this question was submitted, not when it is sent.
    const chosen = form.querySelector("input[name=style]:checked");
    queue.push({ text: text, style: chosen ? chosen.value : "" });
    form.dataset.pending = String(queue.length);
    box.value = "";
    box.focus();
    pump(form);
  });

  // A GET form[data-drop-empty] (the task list's filters): the filters left empty are not
  // sent, so the address bar — which keeps the search for bookmarking — reads "?q=loan",
  // not "?q=loan&project=&domain=…".
  document.addEventListener("htmx:configRequest", function (event) {
    const elt = event.detail && event.detail.elt;
    if (!(elt instanceof HTMLElement) || !elt.matches("form[data-drop-empty]")) return;
    if (String(event.detail.verb).toLowerCase() !== "get") return;
    const params = event.detail.parameters;
    for (const key of Array.from(params.keys ? params.keys() : Object.keys(params))) {
      const value = params.get ? params.get(key) : params[key];
      if (value === "" || value === null || value === undefined) {
        params.delete ? params.delete(key) : delete params[key];
      }
    }
  });
  // The task list's bulk form (form[data-bulk]): how many tasks are selected; the page's box
  // ticks every row; "All N matching the filter" ticks and fixes the rows and counts N (the
  // server then reads the filter, not the ticks); only the chosen action's fields show (the
  // others are disabled, so they are not sent); Apply waits for a selection and an action.
  function bulkRows(form) {
    return Array.from(form.querySelectorAll('input[name="ids"]'));
  }
  function bulkSync(form) {
    const rows = bulkRows(form);
    const all = form.querySelector("[data-bulk-all]");
    const everything = Boolean(all && all.checked);
    rows.forEach(function (box) {
      if (everything) box.checked = true;
      box.disabled = everything;
    });
    const ticked = rows.filter(function (box) { return box.checked; }).length;
    const count = everything ? Number(all.dataset.total) : ticked;
    const out = form.querySelector("[data-bulk-count]");
    if (out) out.textContent = count + " selected";
    const pageBox = form.querySelector("[data-bulk-page]");
    if (pageBox) {
      pageBox.checked = rows.length > 0 && ticked === rows.length;
      pageBox.indeterminate = ticked > 0 && ticked < rows.length;
      pageBox.disabled = everything;
    }
    const action = form.querySelector("[data-bulk-action]");
    const chosen = action ? action.value : "";
    form.querySelectorAll("[data-bulk-field]").forEach(function (label) {
      const shown = label.dataset.bulkField.split(" ").includes(chosen);
      label.hidden = !shown;
      label.querySelectorAll("input, select").forEach(function (el) { el.disabled = !shown; });
    });
    const apply = form.querySelector("[data-bulk-apply]");
    if (apply) apply.disabled = !(count > 0 && chosen);
  }
  function bulkInit() {
    document.querySelectorAll("form[data-bulk]").forEach(bulkSync);
  }
  document.addEventListener("change", function (event) {
    const el = event.target;
    const form = el instanceof HTMLElement ? el.closest("form[data-bulk]") : null;
    if (!form) return;
    if (el.matches("[data-bulk-page]")) {
      bulkRows(form).forEach(function (box) { box.checked = el.checked; });
    } else if (el.matches("[data-bulk-all]") && !el.checked) {
      bulkRows(form).forEach(function (box) { box.checked = false; });
    }
    bulkSync(form);
  });
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.matches("[data-bulk]")) return;
    // A big selection takes a moment: say so, and let one click send it once.
    const apply = form.querySelector("[data-bulk-apply]");
    form.setAttribute("aria-busy", "true");
    if (apply) {
      apply.textContent = "Applying…";
      setTimeout(function () { apply.disabled = true; }, 0);
    }
  });
  document.addEventListener("DOMContentLoaded", bulkInit);
  document.addEventListener("htmx:afterSettle", bulkInit);
  window.addEventListener("pageshow", bulkInit);
})();
