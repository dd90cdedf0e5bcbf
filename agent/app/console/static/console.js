// lessonloop console: the only script. Asks before destructive buttons (data-confirm);
// no inline handlers, so the Content-Security-Policy can forbid inline script.
document.addEventListener("submit", function (event) {
  var button = event.submitter;
  var question = button && button.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
