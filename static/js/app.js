// Behaviour shared by every page. The Content-Security-Policy forbids inline event handlers
// (onchange="…"), so elements declare what they need with data attributes instead.
(function () {
  "use strict";
  // <select data-autosubmit>: submit its form as soon as the choice changes.
  document.addEventListener("change", function (event) {
    const el = event.target;
    if (el instanceof HTMLElement && el.matches("[data-autosubmit]") && el.form) {
      el.form.requestSubmit ? el.form.requestSubmit() : el.form.submit();
    }
  });
})();
