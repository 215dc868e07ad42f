// The authoring workspace: tabs, autosave, registry editing, keyboard shortcuts.
// Everything is stored by the server; this file only moves form fields around.
(function () {
  "use strict";
  const form = document.getElementById("workspace");
  if (!form) return;
  const readonly = form.dataset.readonly === "1";
  const AUTOSAVE_MS = 1500;
  let dirty = false;
  let timer = null;
  const RETRY_MS = 5000;
  let submitAfterSave = false;

  // htmx: show 4xx fragments (refusals, conflicts) instead of dropping them.
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "4..", swap: true, error: false },
    // 503: the save was not stored (database connection lost); the fragment says so.
    { code: "503", swap: true, error: false },
    { code: "...", swap: false, error: true },
  ];

  // --- tabs -------------------------------------------------------------------------------
  const tabs = Array.from(document.querySelectorAll('[role="tab"][data-tab]'));
  function showTab(name) {
    tabs.forEach((t) => {
      t.setAttribute("aria-selected", String(t.dataset.tab === name));
      t.tabIndex = t.dataset.tab === name ? 0 : -1;
    });
    document.querySelectorAll("[data-panel]").forEach((p) => { p.hidden = p.dataset.panel !== name; });
    if (name === "preview") htmx.trigger(document.body, "show-preview");
    history.replaceState(null, "", "#" + name);
  }
  tabs.forEach((t) => t.addEventListener("click", () => showTab(t.dataset.tab)));
  // The tab strip as the ARIA pattern has it: one Tab stop (the selected tab), arrow keys,
  // Home and End move between tabs and show the one they reach.
  tabs.forEach((t) => t.addEventListener("keydown", (e) => {
    const at = tabs.indexOf(t);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const tab = tabs[(to + tabs.length) % tabs.length];
    showTab(tab.dataset.tab);
    tab.focus();
  }));
  const initial = location.hash.replace("#", "");
  if (tabs.some((t) => t.dataset.tab === initial)) showTab(initial);

  // --- autosave ---------------------------------------------------------------------------
  function status(text, cls) {
    const el = document.getElementById("save-status");
    if (el) el.innerHTML = '<span class="' + (cls || "muted") + '">' + text + "</span>";
  }
  function isWorkspaceField(el) {
    const name = el && el.name ? el.name : "";
    return name.startsWith("spec.") || name.startsWith("env.") || name.startsWith("blocker");
  }
  function markDirty() {
    if (readonly) return;
    dirty = true;
    // A conflict notice stays until the author chooses (save over, or load theirs): an
    // autosave on the refused version would only be refused again, and replacing the notice
    // as the field loses focus would take its buttons from under the click.
    if (document.querySelector("#save-status.conflict")) return;
    status("Unsaved changes…");
    clearTimeout(timer);
    timer = setTimeout(saveNow, AUTOSAVE_MS);
  }
  // An autosave folds into this page's revision; an explicit save (Ctrl+S, the Save
  // button) ends the editing session, so the next autosave starts a new revision.
  function saveNow(explicit) {
    clearTimeout(timer);
    if (readonly) return;
    status("Saving…");
    htmx.trigger(form, explicit ? "save" : "autosave");
  }
  form.addEventListener("htmx:configRequest", (e) => {
    if (e.detail.elt !== form) return;
    const kind = e.detail.triggeringEvent ? e.detail.triggeringEvent.type : "";
    e.detail.parameters.autosave = kind === "autosave" ? "1" : "";
  });
  form.addEventListener("input", (e) => { if (isWorkspaceField(e.target)) markDirty(); });
  form.addEventListener("change", (e) => { if (isWorkspaceField(e.target)) markDirty(); });
  form.addEventListener("htmx:afterRequest", (e) => {
    if (e.detail.elt !== form) return;
    const code = e.detail.xhr.status;
    if (code === 200) {
      dirty = false;
      if (submitAfterSave) { submitAfterSave = false; document.getElementById("submit-btn").click(); }
    } else {
      submitAfterSave = false;
      if (code === 0 || code >= 500) {
        // Nothing was stored: keep the edits and try again shortly.
        if (code !== 503) status("Not saved: the server did not answer. Your edits are kept; saving again…", "bad");
        clearTimeout(timer);
        timer = setTimeout(saveNow, RETRY_MS);
      }
    }
  });
  window.addEventListener("beforeunload", (e) => { if (dirty) { e.preventDefault(); e.returnValue = ""; } });

  // The save-conflict notice floats in the half of the window with more room beside the field
  // being typed in, and no taller than that room, so it never covers the field.
  function placeConflict(notice) {
    const field = document.activeElement;
    const height = window.innerHeight;
    let above = height / 2, below = height / 2;
    if (field && field !== document.body && field.getBoundingClientRect) {
      const rect = field.getBoundingClientRect();
      above = rect.top;
      below = height - rect.bottom;
    }
    const atTop = above > below;
    notice.classList.toggle("at-top", atTop);
    notice.style.maxHeight = Math.max((atTop ? above : below) - 24, 160) + "px";
  }
  document.addEventListener("htmx:afterSwap", () => {
    const notice = document.querySelector("#save-status.conflict");
    if (notice) placeConflict(notice);
  });

  // Conflict view: save mine over theirs = save again, naming the version now current.
  document.addEventListener("click", (e) => {
    const btn = e.target.closest("[data-overwrite]");
    if (!btn) return;
    document.getElementById("expected-version").value = btn.dataset.overwrite;
    saveNow();
  });

  // Submit: save pending edits first, then submit.
  const submitBtn = document.getElementById("submit-btn");
  if (submitBtn) {
    submitBtn.addEventListener("htmx:confirm", (e) => {
      if (dirty) { e.preventDefault(); submitAfterSave = true; saveNow(); }
    });
  }

  // --- registry ---------------------------------------------------------------------------
  const list = document.getElementById("blocker-list");
  function blockers() { return Array.from(list.querySelectorAll("fieldset.blocker-edit")); }
  function renumber() {
    blockers().forEach((b, i) => { b.querySelector(".blocker-num").textContent = i + 1; });
    const count = document.getElementById("blocker-count");
    if (count) count.textContent = blockers().length;
    htmx.trigger(document.body, "registry-changed");
  }
  function nextIndex() {
    return blockers().reduce((m, b) => Math.max(m, Number(b.dataset.index) + 1), 0);
  }
  // A SQL subtype belongs to one type. Every subtype stays offered, grouped by its type:
  // choosing one of another type changes the type, and a new type brings its first subtype;
  // either way the note says what changed and why (nothing is disabled or hidden without a
  // word), and the line under the selects says which kind the blocker now is.
  function syncSubtypes(fieldset, changed) {
    const type = fieldset.querySelector(".blocker-type");
    const sub = fieldset.querySelector(".blocker-subtype");
    if (!type) return;
    const current = sub ? sub.selectedOptions[0] : null;
    const owner = current ? current.parentElement.dataset.type : null;
    if (sub && owner !== type.value) {
      const names = (t) => Array.from(sub.querySelectorAll("optgroup"))
        .filter((g) => g.dataset.type === t)
        .flatMap((g) => Array.from(g.querySelectorAll("option"), (o) => o.value));
      let said = "";
      if (changed === sub && owner) {
        type.value = owner;
        said = current.value + " belongs to type " + owner + ", so the type is now " + owner + ".";
      } else if (names(type.value).length) {
        const allowed = names(type.value);
        sub.value = allowed[0];
        said = (current ? current.value + " belongs to type " + owner + ", not " + type.value + ": " : "") +
          "the subtype is now " + allowed[0] + " (type " + type.value + " has " + allowed.join(", ") + ").";
      }
      const note = fieldset.querySelector(".subtype-note");
      if (note && said) { note.textContent = said; note.classList.remove("muted"); }
    }
    const kind = fieldset.querySelector(".gap-kind");
    const chosen = sub ? sub.selectedOptions[0] : type.selectedOptions[0];
    if (kind && chosen) {
      kind.replaceChildren("Kind: ", Object.assign(document.createElement("strong"), { textContent: chosen.dataset.kind || "—" }),
        sub ? " (subtype " + sub.value + " of type " + type.value + ")." : ".");
    }
  }
  function addQuestion(fieldset, focus) {
    const ol = fieldset.querySelector(".q-list");
    const index = fieldset.dataset.index;
    const li = document.createElement("li");
    const n = ol.children.length + 1;
    const max = ol.dataset.maxlength ? ' maxlength="' + Number(ol.dataset.maxlength) + '"' : "";
    li.innerHTML = '<input name="blocker-' + index + '-q"' + max + ' aria-label="Trigger question ' + n + '" autocomplete="off">' +
      '<button type="button" class="icon q-remove" aria-label="Remove this trigger question">×</button>';
    ol.appendChild(li);
    if (focus) li.querySelector("input").focus();
  }
  function addBlocker() {
    htmx.ajax("GET", form.dataset.blockerUrl + "?index=" + nextIndex(), { target: "#blocker-list", swap: "beforeend" });
  }
  list.addEventListener("click", (e) => {
    const fieldset = e.target.closest("fieldset.blocker-edit");
    if (!fieldset || readonly) return;
    if (e.target.closest(".q-add")) { addQuestion(fieldset, true); markDirty(); }
    else if (e.target.closest(".q-remove")) { e.target.closest("li").remove(); markDirty(); htmx.trigger(document.body, "registry-changed"); }
    else if (e.target.closest(".b-up") && fieldset.previousElementSibling) { list.insertBefore(fieldset, fieldset.previousElementSibling); renumber(); markDirty(); }
    else if (e.target.closest(".b-down") && fieldset.nextElementSibling) { list.insertBefore(fieldset.nextElementSibling, fieldset); renumber(); markDirty(); }
    else if (e.target.closest(".b-delete")) {
      const key = fieldset.querySelector(".blocker-key").textContent;
      if (confirm("Delete blocker " + key + "? (Revision history keeps it.)")) { fieldset.remove(); renumber(); markDirty(); }
    }
  });
  list.addEventListener("change", (e) => {
    if (e.target.classList.contains("blocker-type") || e.target.classList.contains("blocker-subtype")) {
      syncSubtypes(e.target.closest("fieldset"), e.target);
    }
  });
  list.addEventListener("input", (e) => {
    if (e.target.name && e.target.name.endsWith("-key")) e.target.closest("fieldset").querySelector(".blocker-key").textContent = e.target.value;
  });
  document.body.addEventListener("htmx:afterSwap", (e) => {
    if (e.detail.target === list) {
      const added = blockers().at(-1);
      syncSubtypes(added);
      renumber();
      showTab("blockers");
      added.querySelector('input[name$="-key"]').focus();  // a new blocker starts with its id
      markDirty();
    }
    if (e.detail.target && e.detail.target.id === "setup-patch") markDirty();
    if (e.detail.target && e.detail.target.id === "gold-sql") markDirty();
  });
  const addBtn = document.getElementById("add-blocker");
  if (addBtn) addBtn.addEventListener("click", addBlocker);
  blockers().forEach(syncSubtypes);
  renumber();

  // --- keyboard ---------------------------------------------------------------------------
  const help = document.getElementById("help-overlay");
  function toggleHelp(show) { help.hidden = !show; if (show) document.getElementById("help-close").focus(); }
  document.getElementById("help-btn").addEventListener("click", () => toggleHelp(true));
  document.getElementById("help-close").addEventListener("click", () => toggleHelp(false));
  function currentBlocker() {
    return document.activeElement ? document.activeElement.closest("fieldset.blocker-edit") : null;
  }
  document.addEventListener("keydown", (e) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s") { e.preventDefault(); saveNow(true); return; }
    if (e.key === "Escape" && !help.hidden) { toggleHelp(false); return; }
    if (e.key === "?" && !typing) { e.preventDefault(); toggleHelp(help.hidden); return; }
    if (!e.altKey) return;
    if (e.key === "Enter" && submitBtn) { e.preventDefault(); submitBtn.click(); }
    else if (/^[1-4]$/.test(e.key)) { e.preventDefault(); showTab(tabs[Number(e.key) - 1].dataset.tab); }
    else if (e.code === "KeyB" && !readonly) { e.preventDefault(); addBlocker(); }
    else if (e.code === "KeyN") {
      e.preventDefault();
      showTab("blockers");
      const all = blockers();
      const next = all[(all.indexOf(currentBlocker()) + 1) % all.length];
      if (next) { next.scrollIntoView({ block: "start" }); next.querySelector("input, textarea").focus(); }
    } else if (e.code === "KeyQ" && !readonly) {
      e.preventDefault();
      const fieldset = currentBlocker() || blockers()[0];
      if (fieldset) { showTab("blockers"); addQuestion(fieldset, true); markDirty(); }
    }
  });

  // Everything above is wired: a click on a tab now shows its panel. The deferred script runs
  // after the page is drawn, so a click that came first did nothing; scripts and the browser
  // tests wait for this mark rather than for the form to be visible.
  form.dataset.ready = "1";
})();
