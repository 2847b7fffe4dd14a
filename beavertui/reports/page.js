(function () {
  var root = document.documentElement;
  root.classList.add('js');
  function items(el, sel) { return Array.prototype.slice.call(el.querySelectorAll(sel)); }
  // A folded section (the evaluation card, a table's shared notes) prints open, then folds again.
  var unfolded = [];
  window.addEventListener('beforeprint', function () {
    unfolded = items(document, 'details:not([open])');
    unfolded.forEach(function (d) { d.open = true; });
  });
  window.addEventListener('afterprint', function () {
    unfolded.forEach(function (d) { d.open = false; });
    unfolded = [];
  });
  function show(sec, it) {
    var last = parseInt(sec.dataset.last, 10) || 0;
    it = Math.max(Math.min(it, last), last > 0 ? 1 : 0);
    sec.dataset.cursor = String(it);
    items(sec, '[data-it]').forEach(function (e) { e.hidden = e.dataset.it !== String(it); });
    items(sec, '[data-mark]').forEach(function (e) { e.classList.toggle('here', e.dataset.mark === String(it)); });
    items(sec, '.cur').forEach(function (e) { e.textContent = String(it); });
    items(sec, '[data-step]').forEach(function (b) {
      var s = b.dataset.step;
      b.disabled = (s === 'first' || s === '-1') ? it <= 1 : it >= last;
    });
  }
  function step(sec, how) {
    var cur = parseInt(sec.dataset.cursor, 10) || 0, last = parseInt(sec.dataset.last, 10) || 0;
    show(sec, how === 'first' ? 1 : how === 'last' ? last : cur + parseInt(how, 10));
  }
  function init(sec) {
    if (sec.dataset.ready) { return; }
    sec.dataset.ready = '1';
    show(sec, parseInt(sec.dataset.last, 10) || 0);
  }
  document.addEventListener('click', function (ev) {
    var t = ev.target.closest('[data-step],[data-go],[data-diff],[data-log],[data-tool]');
    var sec = t && t.closest('section.session');
    if (!sec || t === sec) { return; }
    if (t.dataset.step) { step(sec, t.dataset.step); }
    else if (t.dataset.go) { show(sec, parseInt(t.dataset.go, 10)); }
    else if (t.dataset.diff) { sec.dataset.diff = t.dataset.diff; }
    else if (t.dataset.log) { sec.dataset.log = t.dataset.log; }
    else if (t.dataset.tool) { sec.dataset.tool = t.dataset.tool; }
  });
  function active() {
    if (root.classList.contains('run-page')) { return document.querySelector('section.session.open'); }
    return document.querySelector('section.session');
  }
  document.addEventListener('keydown', function (ev) {
    var sec = active();
    if (!sec || ev.altKey || ev.ctrlKey || ev.metaKey) { return; }
    var how = {ArrowLeft: '-1', ArrowRight: '1', Home: 'first', End: 'last'}[ev.key];
    if (how) { step(sec, how); ev.preventDefault(); }
  });
  async function inflate(sec) {
    var z = sec.querySelector('script.z');
    if (!z) { return sec; }
    if (typeof DecompressionStream === 'undefined') {
      sec.querySelector('.wait').textContent = 'This browser cannot unpack the session (it lacks DecompressionStream).';
      return sec;
    }
    var bin = atob(z.textContent.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    var tpl = document.createElement('template');
    tpl.innerHTML = (await new Response(stream).text()).trim();
    var real = tpl.content.firstElementChild;
    sec.replaceWith(real);
    return real;
  }
  async function route() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    var isSession = !!(target && target.classList.contains('session'));
    items(document, 'section.session.open').forEach(function (s) { s.classList.remove('open'); });
    if (isSession) {
      target = await inflate(target);
      target.classList.add('open');
      init(target);
      window.scrollTo(0, 0);
    }
    root.classList.toggle('one', isSession);
    document.body.dataset.shown = isSession ? id : '';
  }
  if (root.classList.contains('run-page')) {
    window.addEventListener('hashchange', route);
    route();
  } else {
    items(document, 'section.session').forEach(init);
    document.body.dataset.shown = 'session';
  }
})();
