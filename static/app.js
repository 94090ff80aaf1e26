/* aepforms operator UI: the small script. The page is complete without it;
 * this adds live updates and comfort. No framework, no inline script.
 *
 * Browser push protocol (also in docs/DESIGN.md, "Browser push protocol"):
 * the page's <body data-push> names the UI's SSE endpoint,
 * {base}/push?{agent,session,kind filter}&since={epoch}-{seq the page was
 * rendered at}. Every message's SSE id is "{epoch}-{inbox change seq}" (the
 * epoch names the server process, so a replica never reads another's
 * seq), and EventSource resumes with Last-Event-ID. Events:
 *   card    data: the HTML of one card (components.CardFragment): one
 *           <article id="card-{cardID}" data-card data-version data-open
 *           data-pending data-settled data-group data-group-label data-sort>.
 *           Replaces the card with that id, or is placed as a new one.
 *           What the card is (open, pending, settled, its state line) is
 *           the server's verdict: this script decides none of it, and a
 *           deadline it counts down locks nothing (the server's sweep
 *           pushes the locked version).
 *   remove  data: the card's DOM id ("card-{cardID}"): the card left the
 *           view (evicted, or no longer matches the filter).
 *   status  data: the HTML of components.StatusFragment: top-level
 *           elements with ids (#banners, data-relay="up|connecting|lost") that replace
 *           the elements with the same ids.
 *   batches data: JSON {count, groups: [{shape, n, text}]}: the inbox's
 *           "Answer several at once" counts (view.BatchSummary), sent
 *           to a page whose push URL has batches=1, at most one per
 *           --batch-push-interval, no id (it is no change of its own).
 *   reload  the server cannot catch this page up: "too far behind" reloads
 *           the page; "another server" (a restarted process, a replica that
 *           did not draw the page) reconciles it in place (reconcile()):
 *           cards that server does not hold are withdrawn, drafts kept.
 * Comments (": ping") are heartbeats and are not seen here.
 *
 * A page of many requests (#inbox data-page-cards="N") keeps the N most
 * urgent waiting requests as cards and the rest as one-line rows
 * (components.RowFragment: <div class="row" id="card-{cardID}" data-row>,
 * the same id a card has). A pushed card past N is turned into a row
 * (GET data-fragment's /row), a row into a card when a card leaves
 * (GET its fragment); a row's link opens its card in place. A pushed
 * request past the page's last (data-page-until) or before its first
 * (data-page-after) belongs to another page and is only counted.
 */
(function () {
  'use strict';

  var doc = document;
  var body = doc.body;
  doc.documentElement.classList.add('js');

  var ds = body.dataset;
  var serverSkew = ds.now ? Date.parse(ds.now) - Date.now() : 0;
  if (isNaN(serverSkew)) serverSkew = 0;
  function now() { return Date.now() + serverSkew; }

  var store = (function () {
    try {
      var k = '__aepforms_probe';
      window.localStorage.setItem(k, k);
      window.localStorage.removeItem(k);
      return window.localStorage;
    } catch (e) {
      return null;
    }
  })();
  function load(key, fallback) {
    if (!store) return fallback;
    try {
      var v = store.getItem(key);
      return v === null ? fallback : JSON.parse(v);
    } catch (e) {
      return fallback;
    }
  }
  function save(key, value) {
    if (!store) return;
    try {
      if (value === null) store.removeItem(key);
      else store.setItem(key, JSON.stringify(value));
    } catch (e) { /* quota: drafts are a comfort, not a promise */ }
  }

  function byId(id) { return doc.getElementById(id); }
  function cardOf(node) { return node && node.closest ? node.closest('.card') : null; }
  function cards(sel) { return Array.prototype.slice.call(doc.querySelectorAll(sel)); }

  /* ---------- drafts (per card, in this browser, cleared on send) ---------- */

  var DRAFT = 'aepforms:draft:';
  var DRAFT_TTL = 7 * 24 * 3600 * 1000;

  function formState(form) {
    var out = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name || el.name === 'token' || el.type === 'submit' || el.type === 'button') return;
      if ((el.type === 'checkbox' || el.type === 'radio') && !el.checked) return;
      if (el.value === '' && el.type !== 'checkbox' && el.type !== 'radio') return;
      (out[el.name] = out[el.name] || []).push(el.value);
    });
    return out;
  }

  function saveDraft(form) {
    var id = form.dataset.card;
    var st = formState(form);
    save(DRAFT + id, Object.keys(st).length ? { t: Date.now(), v: st } : null);
  }

  function restoreDraft(form) {
    if (form.dataset.kept === 'true') return;
    var d = load(DRAFT + form.dataset.card, null);
    if (!d || !d.v) return;
    var restored = false;
    Array.prototype.forEach.call(form.elements, function (el) {
      var vals = d.v[el.name];
      if (!vals || el.name === 'token' || /^(submit|button|hidden)$/.test(el.type)) return;
      if (el.type === 'checkbox' || el.type === 'radio') {
        el.checked = vals.indexOf(el.value) >= 0;
      } else {
        el.value = vals[0];
      }
      restored = true;
    });
    if (restored) {
      var card = cardOf(form);
      if (card) card.dataset.dirty = 'true';
    }
  }

  function pruneDrafts() {
    if (!store) return;
    for (var i = store.length - 1; i >= 0; i--) {
      var k = store.key(i);
      if (k && k.indexOf(DRAFT) === 0) {
        var d = load(k, null);
        if (!d || !d.t || Date.now() - d.t > DRAFT_TTL) store.removeItem(k);
      }
    }
  }

  /* ---------- locally hidden cards (never sent anywhere) ---------- */

  var HIDDEN = 'aepforms:hidden';
  function hiddenSet() { return load(HIDDEN, []); }
  function setHidden(list) { save(HIDDEN, list.slice(-500)); }

  /* A question's own page shows its card whatever the inbox hid: the
     operator opened it to see it (inbox.single). */
  function applyHidden(card) {
    card.classList.toggle('is-hidden', !inbox.single && hiddenSet().indexOf(card.dataset.card) >= 0);
  }

  /* ---------- Other, textarea growth, long prompts ---------- */

  function otherWrap(choice) { return byId(choice.dataset.otherChoice + '-wrap'); }

  function syncOther(root) {
    root.querySelectorAll('[data-other-choice]').forEach(function (choice) {
      var wrap = otherWrap(choice);
      var input = byId(choice.dataset.otherChoice);
      if (!wrap || !input) return;
      var show = choice.checked || input.value !== '';
      wrap.classList.toggle('is-collapsed', !show);
    });
    root.querySelectorAll('[data-other-select]').forEach(function (sel) {
      var input = byId(sel.dataset.otherSelect);
      var wrap = input && byId(input.id + '-wrap');
      if (wrap) wrap.classList.toggle('is-collapsed', !(sel.value === 'other' || input.value !== ''));
    });
  }

  function otherTyped(input) {
    if (input.value === '') return;
    var choice = byId(input.id + '-choice');
    if (choice && !choice.checked) {
      choice.checked = true;
      choice.dispatchEvent(new Event('change', { bubbles: true }));
    }
    var sel = doc.querySelector('[data-other-select="' + input.id + '"]');
    if (sel && sel.value !== 'other') sel.value = 'other';
  }

  function grow(ta) {
    ta.style.height = 'auto';
    ta.style.height = ta.scrollHeight + 4 + 'px';
  }

  /* growAll sizes many text boxes with one layout, not one each: every
   * write first, then every read, then every write (a page of fifty
   * forms otherwise lays itself out fifty times while it loads). */
  function growAll(list) {
    var tas = Array.prototype.slice.call(list);
    tas.forEach(function (ta) { ta.style.height = 'auto'; });
    var hs = tas.map(function (ta) { return ta.scrollHeight; });
    tas.forEach(function (ta, i) { ta.style.height = hs[i] + 4 + 'px'; });
  }

  /* enhance wires up a card (or the whole page) after it is rendered. */
  function enhance(root) {
    // Not on a question's own page: hiding would leave it empty.
    if (!inbox.single) root.querySelectorAll('[data-action="hide"]').forEach(function (b) { b.hidden = false; });
    root.querySelectorAll('[data-action="expand"], [data-action="load-prompt"]').forEach(function (b) {
      var p = byId(b.getAttribute('aria-controls'));
      if (!p) return;
      p.classList.add('is-collapsed');
      b.hidden = false;
    });
    root.querySelectorAll('form[data-card]').forEach(function (f) {
      restoreDraft(f);
      // The server's checks speak for the form (one error style): no
      // browser popups, one at a time, with the label scrolled off.
      f.noValidate = true;
    });
    // A note restored from a draft shows itself.
    root.querySelectorAll('details[data-kind="note"]').forEach(function (d) {
      var ta = d.querySelector('textarea');
      if (ta && ta.value !== '') d.open = true;
    });
    syncOther(root);
    growAll(root.querySelectorAll('textarea[data-grow]'));
    var list = root.classList && root.classList.contains('card') ? [root] : root.querySelectorAll('.card');
    Array.prototype.forEach.call(list, applyHidden);
  }

  /* ---------- events on the page (delegated, so pushed cards work too) ---------- */

  doc.addEventListener('input', function (e) {
    var t = e.target;
    var card = cardOf(t);
    if (t.matches('[data-other-input]')) otherTyped(t);
    if (card && t.form) {
      card.dataset.dirty = 'true';
      saveDraft(t.form);
    }
    if (t.matches('textarea[data-grow]')) grow(t);
    if (card) syncOther(card);
  });

  /* ---------- keyboard flow (listed in the #keys dialog) ----------
   * j / k: next / previous card waiting for an answer; 1-9: select the
   * n-th choice of the focused select field, or the n-th option of an
   * option card (select, never send); o: type in Other; Ctrl/Cmd+Enter:
   * send the card in focus (an option card once an option is selected);
   * Esc: leave a text box; ?: the list. Single-key shortcuts can be
   * switched off in the list (WCAG 2.1 SC 2.1.4) and never act while a
   * text control has focus. */

  var KEYS = 'aepforms:keys';
  function keysOn() { return load(KEYS, true) !== false; }

  function isText(el) {
    if (!el || !el.tagName) return false;
    if (el.isContentEditable || el.tagName === 'TEXTAREA') return true;
    return el.tagName === 'INPUT' && !/^(checkbox|radio|button|submit|reset|hidden|image|range|color|file)$/.test(el.type);
  }

  /* pendingCards are the cards on the page an answer can be sent from
   * now: the server's verdict says which wait (data-pending). */
  function pendingCards() {
    return cards('#open .card[data-pending="true"]').filter(function (c) {
      return !c.hidden && !c.classList.contains('is-hidden') && !c.classList.contains('is-locked') &&
        !!c.querySelector('form[data-card]');
    });
  }

  var current = null;
  function currentCard() {
    var a = doc.activeElement;
    var c = a && a !== body ? cardOf(a) : null;
    if (c) return c;
    return current && doc.contains(current) ? current : null;
  }
  function markCurrent(card) {
    if (current && current !== card) current.classList.remove('is-current');
    current = card;
    if (card) card.classList.add('is-current');
    if (card && ql.on && card.closest('#open')) select(card.id);
  }

  /* firstControl is where the operator starts on a card: its first control
   * that sends nothing (a field, Other, "Add a note"), so a repeated Enter
   * never presses a send button of the card they were brought to. */
  function firstControl(card) {
    var all = card.querySelectorAll('form[data-card] input:not([type="hidden"]), form[data-card] select, form[data-card] textarea, form[data-card] summary, form[data-card] button');
    for (var i = 0; i < all.length; i++) {
      var el = all[i];
      if (el.disabled || el.type === 'submit' || el.closest('.is-collapsed')) continue;
      if (el.tagName !== 'SUMMARY' && el.closest('details:not([open])')) continue;
      if (el.type === 'radio' && !el.checked) {
        var group = card.querySelectorAll('input[type="radio"][name="' + el.name + '"]');
        var checked = Array.prototype.filter.call(group, function (r) { return r.checked; })[0];
        if (checked) el = checked;
      }
      return el;
    }
    return null;
  }

  function cardHeading(card) {
    var t = card.querySelector('.card__title');
    if (t) t.setAttribute('tabindex', '-1');
    return t || card;
  }

  /* goTo brings a card into view and focus: its heading (j/k), or its
   * first control (after a send). */
  function goTo(card, toControl) {
    markCurrent(card);
    card.scrollIntoView({ block: 'start' });
    var target = toControl ? firstControl(card) || cardHeading(card) : cardHeading(card);
    target.focus({ preventScroll: true });
  }

  /* following is the card after (or, back, before) ref among list, in
   * page order, wrapping round; ref may have left the list. */
  function following(list, ref, back) {
    if (!list.length) return null;
    if (!ref) return back ? list[list.length - 1] : list[0];
    var after = list.filter(function (c) {
      var pos = ref.compareDocumentPosition(c);
      return back ? pos & Node.DOCUMENT_POSITION_PRECEDING : pos & Node.DOCUMENT_POSITION_FOLLOWING;
    });
    if (after.length) return back ? after[after.length - 1] : after[0];
    var rest = list.filter(function (c) { return c !== ref; });
    return rest.length ? (back ? rest[rest.length - 1] : rest[0]) : null;
  }

  /* moveOn takes the operator to the next card waiting after from (its
   * heading, so j/k and the digits act at once; Enter starts typing), or
   * says none is left. */
  function moveOn(from) {
    if (ql.on) { moveOnList(from); return; }
    var next = following(pendingCards(), from, false);
    var none = byId('no-more');
    if (next && next !== from) {
      if (none) none.hidden = true;
      goTo(next, false);
      return;
    }
    markCurrent(null);
    if (none) {
      none.hidden = false;
      none.scrollIntoView({ block: 'nearest' });
      none.focus();
    }
  }

  /* moveOnList is moveOn in the list's order: the next question waiting
   * after from (the next page's first past the last line), else the
   * first one left, else the note that none is. */
  function moveOnList(from) {
    if (ql.timer) syncList();
    var ids = waitingIds(true).filter(function (id) { return id !== from.id; });
    var cmp = listCompare();
    var rec = recOf(from);
    var i = 0;
    while (i < ids.length && cmp(recOf(byId(ids[i])), rec) < 0) i++;
    var none = byId('no-more');
    if (i >= ids.length && ql.next) {
      ql.sel = from.id;
      ql.selRec = rec;
      ql.soft = false;
      ql.queued += 1;
      fetchNext();
      return;
    }
    var to = i < ids.length ? ids[i] : ids[0];
    if (to) {
      if (none) none.hidden = true;
      openItem(byId(to));
      return;
    }
    markCurrent(null);
    if (none) {
      none.hidden = false;
      none.scrollIntoView({ block: 'nearest' });
      none.focus();
    }
  }

  /* selectField is the select field (radios, checkboxes, <select>) the
   * digit keys act on: the focused one, else the card's first. */
  function selectField(card) {
    var a = doc.activeElement;
    var f = a && card.contains(a) ? a.closest('.field[data-kind="radios"], .field[data-kind="checkboxes"], .field[data-kind="select"]') : null;
    return f || card.querySelector('form[data-card] .field[data-kind="radios"], form[data-card] .field[data-kind="checkboxes"], form[data-card] .field[data-kind="select"]');
  }

  function changed(el) { el.dispatchEvent(new Event('change', { bubbles: true })); }

  /* pick selects the n-th choice or option of card; it never sends. */
  function pick(card, n) {
    var options = card.querySelectorAll('form[data-card] button[data-testid="option"]');
    if (options.length) {
      var o = options[n - 1];
      if (!o || o.disabled) return;
      Array.prototype.forEach.call(options, function (b) { b.setAttribute('aria-pressed', b === o ? 'true' : 'false'); });
      o.focus();
      return;
    }
    var field = selectField(card);
    if (!field) return;
    var sel = field.querySelector('select');
    if (sel) {
      var opts = Array.prototype.filter.call(sel.options, function (op) { return op.value !== '' && !op.disabled; });
      if (!opts[n - 1]) return;
      sel.value = opts[n - 1].value;
      changed(sel);
      sel.focus();
      return;
    }
    var box = field.querySelectorAll('input[type="radio"], input[type="checkbox"]')[n - 1];
    if (!box || box.disabled) return;
    box.checked = box.type === 'radio' ? true : !box.checked;
    changed(box);
    // Other chosen: focus went to its text box (focusOther).
    if (!box.dataset.otherChoice || !box.checked) box.focus();
  }

  /* typeOther reveals and focuses the Other text of the field the focus
   * is in; from the card's heading, of its one field with an Other.
   * Anywhere else (the error summary, a card with two) it does nothing:
   * ticking some field's Other would replace a choice the operator made
   * there, unseen. */
  function typeOther(card) {
    var a = doc.activeElement;
    var field = a && card.contains(a) ? a.closest('form[data-card] .field') : null;
    var input = field && field.querySelector('[data-other-input]');
    if (!field && a && isHeading(a)) {
      var all = card.querySelectorAll('form[data-card] [data-other-input]');
      if (all.length === 1) input = all[0];
    }
    if (!input || input.disabled) return;
    var choice = byId(input.id + '-choice');
    if (choice && !choice.checked) { choice.checked = true; changed(choice); }
    var sel = doc.querySelector('[data-other-select="' + input.id + '"]');
    if (sel && sel.value !== 'other') { sel.value = 'other'; changed(sel); }
    syncOther(card);
    input.focus();
  }

  /* sendCard sends card's form: its "Send answer", or on an option card
   * the option selected with a digit key; nothing otherwise. */
  function sendCard(card) {
    var form = card && card.querySelector('form[data-card]');
    if (!form) return false;
    // An option selected with a digit key wins over "Send answer" (an
    // input card offers both): what was selected is what is sent.
    var send = form.querySelector('button[data-testid="option"][aria-pressed="true"]:not([disabled])') ||
      form.querySelector('button[data-testid="submit"]:not([disabled])');
    if (!send) return false;
    form.requestSubmit(send);
    return true;
  }

  function toggleKeys() {
    var d = byId('keys');
    if (!d || !d.showModal) return;
    if (d.open) { d.close(); return; }
    byId('keys-on').checked = keysOn();
    d.showModal();
  }

  /* leaveText takes focus out of text box t, so j/k and the digits act
   * again instead of typing: to its card's heading, to its batch group's
   * heading (whose text goes to every question selected), else to the
   * page. */
  function leaveText(t) {
    var c = cardOf(t);
    if (c) {
      markCurrent(c);
      cardHeading(c).focus({ preventScroll: true });
      return;
    }
    var g = t.closest('[data-testid="batch"]');
    var h = g && g.querySelector('.batch__title');
    if (h) {
      h.setAttribute('tabindex', '-1');
      h.focus({ preventScroll: true });
      return;
    }
    t.blur();
  }

  /* focusOther puts focus in the Other text box of a choice the operator
   * just ticked (by mouse or key), so the first letter typed lands there
   * and not on a shortcut. */
  function focusOther(choice) {
    if (!choice.checked) return;
    var input = byId(choice.dataset.otherChoice);
    if (!input || input.disabled || doc.activeElement === input) return;
    syncOther(cardOf(choice) || choice.form || doc);
    input.focus();
  }

  function isHeading(t) { return !!(t.classList && t.classList.contains('card__title') && cardOf(t)); }
  var enterOn = null; // the heading an Enter was pressed on
  doc.addEventListener('keyup', function (e) {
    if (e.key !== 'Enter' || !enterOn) return;
    var t = enterOn;
    enterOn = null;
    if (e.target !== t) return;
    var into = firstControl(cardOf(t));
    if (into) into.focus();
  });

  doc.addEventListener('keydown', function (e) {
    if (e.isComposing || e.defaultPrevented) return;
    var t = e.target;
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      if (t.form && !cardOf(t.form)) {
        // Another form (sign-in, the history filter): its primary button.
        var other = t.form.querySelector('button[data-testid="submit"]:not([disabled])');
        if (other) { e.preventDefault(); t.form.requestSubmit(other); }
        return;
      }
      if (sendCard(t.form ? cardOf(t.form) : currentCard())) e.preventDefault();
      return;
    }
    if (e.key === 'Escape' && isText(t)) {
      leaveText(t);
      e.preventDefault();
      return;
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey && isHeading(t)) {
      // On a card's heading, Enter starts on its first control: on the
      // key's release, so the press itself cannot reach that control
      // (an Enter in a text box would send the form).
      enterOn = t;
      e.preventDefault();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || !keysOn() || isText(t)) return;
    var d = byId('keys');
    if (d && d.open) return;
    if (t.tagName === 'SELECT' && !/^[1-9]$/.test(e.key)) return; // its own type-ahead
    var cur = currentCard();
    switch (e.key) {
      case 'j':
      case 'k':
      case 'J':
      case 'K':
        if (ql.on) {
          step(e.key.toLowerCase() === 'k' ? -1 : 1, e.key === 'J' || e.key === 'K');
          break;
        }
        var to = following(pendingCards(), cur, e.key.toLowerCase() === 'k');
        if (to) goTo(to, false);
        break;
      case 'o':
        if (!cur) return;
        typeOther(cur);
        break;
      case 'x':
        if (!cur || !batchToggle(cur)) return;
        break;
      case 'c':
        var claimButton = cur && cur.querySelector('[data-action="claim"]');
        if (!claimButton) return;
        claimButton.click();
        break;
      case '?':
        toggleKeys();
        break;
      default:
        if (!/^[1-9]$/.test(e.key) || !cur) return;
        pick(cur, Number(e.key));
    }
    e.preventDefault();
  });

  doc.addEventListener('focusin', function (e) {
    var c = cardOf(e.target);
    if (c && c.closest('#open')) markCurrent(c);
  });

  doc.addEventListener('change', function (e) {
    var t = e.target;
    var card = cardOf(t);
    if (card && t.form) {
      card.dataset.dirty = 'true';
      saveDraft(t.form);
    }
    if (card) syncOther(card);
    if (t.matches && t.matches('[data-other-choice]')) focusOther(t);
  });

  doc.addEventListener('submit', function (e) {
    var form = e.target;
    if (form.dataset.native === 'true') {
      delete form.dataset.native; // the fallback: the browser posts it
      return;
    }
    if (form.dataset.sent === 'true') {
      e.preventDefault(); // a second click: the first post is on its way
      return;
    }
    if (form.dataset.claim === 'true' && reachable && window.fetch && window.URLSearchParams) {
      e.preventDefault();
      claim(form);
      return;
    }
    if (!reachable) {
      e.preventDefault(); // nothing can be sent: the banner says so, the draft is kept
      return;
    }
    var gone = cardOf(form);
    if (gone && gone.dataset.withdrawn === 'true') {
      e.preventDefault(); // the server does not hold it: nothing stale is sent
      return;
    }
    // The draft stays until the server shows it holds the answer
    // (data-drop-draft on the card the answer or a push brings).
    form.dataset.sent = 'true';
    var card = cardOf(form);
    if (card) delete card.dataset.dirty;
    if (card && form.dataset.card && window.fetch && window.URLSearchParams) {
      e.preventDefault();
      post(form, card, e.submitter || null);
    }
  });

  /* post sends an answer with fetch. The server answers with the card's
   * fragment, whatever the outcome (sent, or refused with the error
   * summary it wrote), which replaces the card in place; the operator is
   * then taken to the next card waiting, or to the summary. Anything else
   * (the card gone, a network failure) falls back to the browser's own
   * post, whose page says what happened; a repeat of a post that did
   * reach the server sends nothing twice (its form token). */
  function post(form, card, submitter) {
    var data = submitter ? new FormData(form, submitter) : new FormData(form);
    var fallback = function () {
      delete form.dataset.sent;
      form.dataset.native = 'true';
      form.requestSubmit(submitter && submitter.form === form ? submitter : undefined);
    };
    window.fetch(form.action, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'X-Aepforms-Fragment': 'card', Accept: 'text/html' },
      body: new URLSearchParams(data)
    }).then(function (res) {
      if (res.status === 404) {
        // The server does not hold this question (it restarted, or the
        // question was cleared): withdrawn in place, the draft kept.
        delete form.dataset.sent;
        withdraw(card);
        return;
      }
      var type = res.headers.get('Content-Type') || '';
      if (type.indexOf('text/html') !== 0) { fallback(); return; }
      // The answer was sent but its rule was not kept: the server names
      // the page that says why (the Rules page), one of its own paths.
      var go = res.headers.get('X-Aepforms-Go') || '';
      return res.text().then(function (html) {
        var fresh = parse(html).firstElementChild;
        if (!fresh || fresh.id !== card.id) { fallback(); return; }
        // A rule's "Preview" sent nothing: the operator stays on the
        // card, at what each choice would have answered.
        var preview = submitter && submitter.name === 'rule-preview';
        answered(card, fresh, preview);
        if (go.charAt(0) === '/' && go.charAt(1) !== '/') window.location.assign(go);
      });
    }, function () {
      // No answer from the server: it may be unreachable. The draft stays,
      // the form can be sent again (its token makes a repeat harmless),
      // and the banner says whether the server is there.
      delete form.dataset.sent;
      probe();
    });
  }

  /* claim posts a card's "I’m on it" (or "Not on it any more") and puts
   * the card's claim line the server answers with in place: the card's
   * form, and anything typed in it, stay as they are. Every other page
   * gets the claim by push. Without an answer, the browser posts it. */
  function claim(form) {
    var card = cardOf(form);
    form.dataset.sent = 'true';
    window.fetch(form.action, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'X-Aepforms-Fragment': 'card', Accept: 'text/html' },
      body: new URLSearchParams(new FormData(form))
    }).then(function (res) {
      delete form.dataset.sent;
      if (!res.ok || !card) return;
      return res.text().then(function (html) {
        var fresh = parse(html).firstElementChild;
        if (fresh && fresh.id === card.id) swapClaim(card, fresh);
      });
    }, function () {
      delete form.dataset.sent;
      probe();
    });
  }

  /* swapClaim puts fresh's claim line in card's place of it. */
  function swapClaim(card, fresh) {
    var sel = '[data-testid="claim-bar"]';
    var was = card.querySelector(sel);
    var now = fresh.querySelector(sel);
    var refocus = was && doc.activeElement && was.contains(doc.activeElement);
    if (was && now) was.replaceWith(now);
    else if (was) was.remove();
    else if (now) {
      var st = card.querySelector('.state') || card.querySelector('[data-testid="meta"]');
      if (st) st.after(now);
    }
    if (refocus && now) {
      var b = now.querySelector('[data-action="claim"]');
      if (b) b.focus();
    }
  }

  /* Typing an answer on a card the operator is on is their activity: the
   * claim is renewed (at most every claimRenew ms), so it does not lapse
   * under them. */
  var claimRenew = 30000;
  doc.addEventListener('input', function (e) {
    var card = cardOf(e.target);
    if (!card || !card.querySelector('.claim--mine')) return;
    var last = Number(card.dataset.claimRenewed || 0);
    if (Date.now() - last < claimRenew) return;
    card.dataset.claimRenewed = String(Date.now());
    var form = card.querySelector('form[data-claim="true"]');
    if (!form || !window.fetch) return;
    // A renewal: it never takes back a claim another operator took over.
    var body = new URLSearchParams({ renew: '1' });
    window.fetch(form.action, { method: 'POST', credentials: 'same-origin', headers: { 'X-Aepforms-Fragment': 'card' }, body: body })
      .catch(function () {});
  });

  /* answered puts the card the server answered a post with in place. */
  function answered(card, fresh, preview) {
    // Focus follows the answer only if the operator is still on this card
    // (not already typing in another one while the post was on its way).
    var a = doc.activeElement;
    var follow = !a || a === body || card.contains(a);
    dropDrafts(fresh);
    var summary = fresh.querySelector('.error-summary');
    var old = byId(fresh.id) || card;
    if (!summary && Number(fresh.dataset.version) < Number(old.dataset.version)) {
      fresh = old; // a push brought a newer version first
    } else {
      old.replaceWith(fresh);
      place(fresh);
      enhance(fresh);
    }
    tidyGroups();
    refresh();
    if (!follow) return;
    if (summary) {
      markCurrent(fresh);
      fresh.scrollIntoView({ block: 'start' });
      fresh.querySelector('.error-summary').focus({ preventScroll: true });
      return;
    }
    var shown = preview && fresh.querySelector('[data-testid="rule-preview"]');
    if (shown) {
      markCurrent(fresh);
      shown.setAttribute('tabindex', '-1');
      shown.scrollIntoView({ block: 'center' });
      shown.focus({ preventScroll: true });
      return;
    }
    moveOn(fresh);
  }

  doc.addEventListener('click', function (e) {
    var t = e.target.closest('[data-action], .error-summary a');
    if (!t) return;
    var action = t.dataset.action;
    if (action === 'hide') {
      var card = cardOf(t);
      var list = hiddenSet();
      if (list.indexOf(card.dataset.card) < 0) list.push(card.dataset.card);
      setHidden(list);
      applyHidden(card);
      refresh();
      // The button went with its card: carry on from there, not the top.
      if (card.closest('#open')) moveOn(card);
    } else if (action === 'clear-settled') {
      var hid = hiddenSet();
      cards('#settled-list .card').forEach(function (c) {
        if (hid.indexOf(c.dataset.card) < 0) hid.push(c.dataset.card);
      });
      setHidden(hid);
      cards('.card').forEach(applyHidden);
      refresh();
    } else if (action === 'keys') {
      toggleKeys();
    } else if (action === 'keys-close') {
      byId('keys').close();
    } else if (action === 'unhide-all') {
      setHidden([]);
      cards('.card').forEach(applyHidden);
      refresh();
    } else if (action === 'load-prompt') {
      e.preventDefault();
      loadPrompt(t);
    } else if (action === 'expand') {
      if (t.tagName === 'A') e.preventDefault();
      var p = byId(t.getAttribute('aria-controls'));
      var open = p.classList.toggle('is-collapsed') === false;
      t.setAttribute('aria-expanded', open ? 'true' : 'false');
      t.textContent = open ? 'Show less' : 'Show all';
    } else if (action === 'show-new') {
      revealHeld(true);
    } else if (action === 'show-unseen') {
      showUnseen();
    } else if (action === 'open-row') {
      e.preventDefault();
      if (ql.on) openItem(t.closest('.row'));
      else openRow(t);
    } else if (action === 'select-line') {
      // A new tab or window opens the question's own page.
      if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
      var item = byId(t.parentNode.dataset.for);
      if (!item) return;
      e.preventDefault();
      edgeClear();
      openItem(item);
    } else if (action === 'list-back') {
      if (window.history.state && window.history.state.aepformsOpen) window.history.back();
      else closeFull();
    } else if (t.matches('.error-summary a')) {
      var target = byId(t.getAttribute('href').slice(1));
      if (target) {
        e.preventDefault();
        target.focus();
        var label = target.closest('fieldset') ? target.closest('fieldset').querySelector('legend') : doc.querySelector('label[for="' + target.id + '"]');
        (label || target).scrollIntoView({ block: 'start' });
      }
    }
  });

  /* A prompt shown in part: fetch the whole text (an escaped fragment),
     put it in place as text, and let the link collapse it again. Should the
     fetch fail, follow the link instead. */
  function loadPrompt(a) {
    var quote = byId(a.getAttribute('aria-controls'));
    if (!quote || a.dataset.loading === 'true') return;
    a.dataset.loading = 'true';
    a.textContent = 'Loading…';
    fetch(a.href, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (res) {
        if (!res.ok) throw new Error('status ' + res.status);
        return res.text();
      })
      .then(function (html) {
        var full = new DOMParser().parseFromString(html, 'text/html').querySelector('[data-testid="prompt-full"]');
        if (!full) throw new Error('no prompt in the answer');
        // The whole prompt, as text, in place of the part shown (its
        // Markdown blocks): one paragraph, line breaks kept.
        quote.textContent = '';
        var p = quote.appendChild(doc.createElement('p'));
        p.className = 'md-plain';
        p.textContent = full.textContent;
        quote.classList.remove('is-collapsed');
        var note = a.closest('.prompt__cut');
        a.dataset.action = 'expand';
        a.setAttribute('aria-expanded', 'true');
        a.textContent = 'Show less';
        delete a.dataset.loading;
        if (note) note.firstChild.textContent = '';
      })
      .catch(function () { window.location.assign(a.href); });
  }

  /* Held new cards appear once the operator leaves the form they were in. */
  function leftForm() {
    window.setTimeout(function () { if (held.length && !midForm()) revealHeld(false); }, 0);
  }
  doc.addEventListener('focusout', leftForm);
  doc.addEventListener('focusin', leftForm);

  /* ---------- live updates ---------- */

  var live = false;
  var held = [];

  function midForm() {
    var a = doc.activeElement;
    return !!(a && a.form && cardOf(a));
  }

  /* busy: the operator is working in this card; it is never replaced.
   * A card whose form was just sent is not: the server's next version of
   * it (what was sent, in flight) replaces it whether the send was a
   * click or Ctrl+Enter with the focus still in a text box. */
  function busy(card) {
    if (card.querySelector('form[data-sent="true"]')) return false;
    var a = doc.activeElement;
    return card.dataset.dirty === 'true' || !!(a && card.contains(a) && a.form);
  }

  function parse(html) {
    var t = doc.createElement('template');
    t.innerHTML = html;
    return t.content;
  }

  function lock(card, text) {
    card.classList.add('is-locked');
    card.dataset.open = 'false';
    card.querySelectorAll('input, textarea, select, button').forEach(function (el) {
      if (el.dataset.action) return;
      if (el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT' && /^(text|number)$/.test(el.type))) el.readOnly = true;
      else el.disabled = true;
    });
    if (text) {
      var st = card.querySelector('.state');
      if (st && st.dataset.givesWay === 'true') {
        delete st.dataset.givesWay;
        st.className = 'state state--warning';
        st.replaceChildren();
        var p = doc.createElement('p');
        p.className = 'state__text';
        p.textContent = text;
        st.appendChild(p);
      }
    }
  }

  /* updateState copies a pushed card's state line into a busy card, and
   * what it says of the agent (the provenance line and the details'
   * list: its reach after a relay outage), which hold no input. */
  function updateState(card, fresh) {
    var st = card.querySelector('.state');
    var nst = fresh.querySelector('.state');
    if (st && nst) {
      st.className = nst.className;
      st.dataset.state = nst.dataset.state;
      st.replaceChildren.apply(st, Array.prototype.slice.call(nst.childNodes));
    }
    ['[data-testid="meta"]', '[data-testid="provenance"]'].forEach(function (sel) {
      var was = card.querySelector(sel);
      var now = fresh.querySelector(sel);
      if (was && now) was.replaceWith(now);
    });
    swapClaim(card, fresh); // who is on it holds no input either
    card.dataset.version = fresh.dataset.version;
    card.dataset.state = fresh.dataset.state;
    if (fresh.dataset.open === 'false') lock(card, '');
  }

  function groupFor(card) {
    var g = byId(card.dataset.group);
    if (g) return g;
    var tpl = byId('group-template');
    g = tpl.content.firstElementChild.cloneNode(true);
    g.id = card.dataset.group;
    var h = g.querySelector('.group__title');
    h.id = g.id + '-title';
    h.textContent = card.dataset.groupLabel || '';
    g.setAttribute('aria-labelledby', h.id);
    return g;
  }

  function firstKey(group) {
    var c = group.querySelector('.card, .row');
    return c ? c.dataset.sort : '';
  }

  /* place puts a card where it belongs: its group, by urgency; or the top
   * of the settled list. */
  function place(card) {
    if (card.dataset.settled === 'true') {
      var list = byId('settled-list');
      if (card.parentNode !== list) list.prepend(card);
      byId('settled').hidden = false;
      return;
    }
    var g = groupFor(card);
    var box = g.querySelector('.group__cards');
    if (card.parentNode !== box) {
      var before = null;
      Array.prototype.some.call(box.children, function (c) {
        if (c.dataset.sort > card.dataset.sort) { before = c; return true; }
        return false;
      });
      box.insertBefore(card, before);
    }
    var open = byId('open');
    if (g.parentNode !== open) {
      var next = null;
      Array.prototype.some.call(open.children, function (o) {
        if (firstKey(o) > card.dataset.sort) { next = o; return true; }
        return false;
      });
      open.insertBefore(g, next);
    }
  }

  function tidyGroups() {
    cards('#open .group').forEach(function (g) {
      if (!g.querySelector('.card, .row')) g.remove();
    });
  }

  /* dropDrafts forgets the drafts of the cards whose answer the server
   * holds, or that are settled: the server says which (data-drop-draft). */
  function dropDrafts(root) {
    var list = root.matches && root.matches('[data-drop-draft]') ? [root] : root.querySelectorAll('[data-drop-draft="true"]');
    Array.prototype.forEach.call(list, function (card) { save(DRAFT + card.dataset.card, null); });
  }

  function onCard(html) {
    var fresh = parse(html).firstElementChild;
    if (!fresh || !fresh.id) return;
    dropDrafts(fresh);
    if (inbox.single && fresh.id !== inbox.single) {
      // One question's own page: the others are only counted.
      countOffPage(fresh);
      refresh();
      return;
    }
    var old = byId(fresh.id);
    if (old && old.dataset.row && fresh.dataset.settled !== 'true' && fresh.dataset.open === 'true') {
      old.dataset.version = fresh.dataset.version; // still waiting: it stays a row
      return;
    }
    if (old && old.dataset.row) {
      old.remove(); // settled or closed: shown as its card (the settled list)
      old = null;
    }
    if (!old && offPage(fresh)) {
      countOffPage(fresh);
      refresh();
      return;
    }
    if (!old && fresh.dataset.settled === 'true' && outside(fresh)) countOffPage(fresh);
    if (old && old.dataset.withdrawn === 'true') {
      // The server holds it again (its agent asked it again after a
      // restart): the card comes back as the server draws it, the
      // operator's draft restored into it (enhance), their place kept.
      var a = doc.activeElement;
      var name = a && old.contains(a) ? a.name : '';
      old.replaceWith(fresh);
      place(fresh);
      enhance(fresh);
      var same = name && fresh.querySelector('[name="' + name + '"]');
      if (same) same.focus({ preventScroll: true });
    } else if (old) {
      if (Number(fresh.dataset.version) < Number(old.dataset.version)) return; // out of date
      if (busy(old)) {
        updateState(old, fresh);
      } else {
        var wasHeld = old.dataset.held === 'true';
        var wasOpened = old.dataset.opened === 'true';
        keepOpen(old, fresh);
        old.replaceWith(fresh);
        if (wasHeld) { fresh.hidden = true; fresh.dataset.held = 'true'; }
        if (wasOpened) fresh.dataset.opened = 'true';
        place(fresh);
        enhance(fresh);
      }
    } else {
      var hold = fresh.dataset.open === 'true' && midForm();
      if (hold) {
        fresh.hidden = true;
        fresh.dataset.held = 'true';
        held.push(fresh.id);
      }
      place(fresh);
      enhance(fresh);
      markUnseen(fresh);
    }
    tidyGroups();
    refresh();
    balance();
  }

  /* keepOpen carries what the operator opened on a card (the note box,
   * Details) and the focus on a disclosure over to the card's new
   * version, so a push does not close the note they are about to write. */
  function keepOpen(old, fresh) {
    var a = doc.activeElement;
    old.querySelectorAll('details[data-testid]').forEach(function (d) {
      var same = fresh.querySelector('details[data-testid="' + d.dataset.testid + '"]');
      if (!same) return;
      if (d.open) same.open = true;
      if (a && d.contains(a) && a.tagName === 'SUMMARY') {
        var sum = same.querySelector('summary');
        if (sum) window.setTimeout(function () { sum.focus({ preventScroll: true }); }, 0);
      }
    });
  }

  function onRemove(id) {
    var card = byId(id.trim());
    if (!card) return;
    if (inbox.single) {
      withdraw(card); // its own page keeps showing it, and what was typed
      return;
    }
    if (busy(card)) {
      lock(card, doc.body.dataset.removedText);
    } else {
      card.remove();
      tidyGroups();
    }
    refresh();
    balance();
  }

  function onStatus(html) {
    var frag = parse(html);
    Array.prototype.slice.call(frag.children).forEach(function (el) {
      var old = el.id && byId(el.id);
      if (old) old.replaceWith(el);
    });
    renderConn();
  }

  function revealHeld(scroll) {
    var first = null;
    held.forEach(function (id) {
      var c = byId(id);
      if (!c) return;
      c.hidden = false;
      delete c.dataset.held;
      if (!first) first = c;
    });
    held = [];
    byId('new-notice').hidden = true;
    balance();
    if (scroll && first) {
      first.scrollIntoView({ block: 'start' });
      var t = first.querySelector('.card__title');
      if (t) { t.setAttribute('tabindex', '-1'); t.focus(); }
    }
  }

  /* renderConn writes the header's one connection state: this server
   * unreachable (the probe), else the relay as the server last pushed it
   * (connecting, unreachable), else whether the push stream is open. */
  var connWords = {
    'server-lost': ['Server unreachable', 'This page cannot reach aepforms: sending is off and what you type is kept in this browser'],
    'relay-lost': ['Relay unreachable', 'aepforms cannot reach the relay: new questions will not arrive and answers wait until it is back'],
    'live': ['Live', 'Live updates are on'],
    'not-live': ['Not live', 'Live updates are off: reload to see changes']
  };
  function renderConn() {
    var el = byId('connection');
    if (!el) return;
    var banners = byId('banners');
    var relayLost = banners && banners.dataset.relay === 'lost';
    /* Not lost, not there yet: the server's words (data-relay-text). */
    var connecting = banners && banners.dataset.relay === 'connecting';
    var state = !reachable ? 'server-lost' : connecting ? 'connecting' : relayLost ? 'relay-lost' : live ? 'live' : 'not-live';
    el.dataset.state = state;
    el.className = 'conn conn--' + state;
    var words = connWords[state] || [banners.dataset.relayText, connWords['not-live'][1]];
    el.textContent = words[0];
    el.title = words[1];
  }

  /* ---------- the header: its height, the questions new since looked ---------- */

  /* The header stays at the top of the window: its height is
   * --header-h, which the stylesheet's scroll-padding-top adds, so a
   * card brought into view (j/k, a link) is not hidden under it. */
  var header = doc.querySelector('.top, .panel-bar');
  function headerHeight() {
    if (!header) return;
    doc.documentElement.style.setProperty('--header-h', Math.ceil(header.getBoundingClientRect().height) + 'px');
  }
  if (header && window.ResizeObserver) new window.ResizeObserver(headerHeight).observe(header);
  headerHeight();

  /* unseen holds the waiting questions pushed since the page was drawn
   * that the operator has not had in view (with the page visible): the
   * header's "n new since you looked", which takes them to the first. */
  var unseen = [];
  var watched = {}; // id -> the element observed (a push may redraw it)
  var seer = window.IntersectionObserver ? new window.IntersectionObserver(function (entries) {
    if (doc.visibilityState !== 'visible') return;
    var gone = false;
    entries.forEach(function (en) {
      if (!en.isIntersecting || en.target.hidden) return;
      var i = unseen.indexOf(en.target.id);
      if (i >= 0) { unseen.splice(i, 1); gone = true; }
    });
    if (gone) refresh();
  }, { threshold: 0.3 }) : null;
  function markUnseen(el) {
    if (!seer || !byId('new-since') || el.dataset.pending !== 'true' || unseen.indexOf(el.id) >= 0) return;
    unseen.push(el.id);
  }
  /* Back to the page: what is in view now is seen now. */
  doc.addEventListener('visibilitychange', function () {
    if (doc.visibilityState !== 'visible' || !seer) return;
    Object.keys(watched).forEach(function (id) { seer.unobserve(watched[id]); });
    watched = {};
    refresh();
  });
  /* unseenShown drops from unseen what left or stopped waiting, watches
   * each one's element (a push or a card turned row redraws it) and
   * writes the header's count. */
  function unseenShown() {
    unseen = unseen.filter(function (id) {
      var el = byId(id);
      return el && el.dataset.pending === 'true';
    });
    Object.keys(watched).forEach(function (id) {
      if (byId(id) !== watched[id] || unseen.indexOf(id) < 0) { seer.unobserve(watched[id]); delete watched[id]; }
    });
    unseen.forEach(function (id) {
      if (!watched[id]) { watched[id] = byId(id); seer.observe(watched[id]); }
    });
    var b = byId('new-since');
    if (!b) return;
    b.hidden = unseen.length === 0;
    var n = doc.createElement('span');
    n.textContent = groupDigits(unseen.length) + ' new';
    var tail = doc.createElement('span');
    tail.className = 'new-since__tail';
    tail.textContent = ' since you looked';
    b.replaceChildren(n, tail);
  }
  function showUnseen() {
    if (held.length) { revealHeld(true); return; }
    var first = null;
    unseen.forEach(function (id) {
      var el = byId(id);
      if (el && (!first || first.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_PRECEDING)) first = el;
    });
    if (!first) return;
    if (first.dataset.row) {
      first.scrollIntoView({ block: 'start' });
      var a = first.querySelector('a');
      if (a) a.focus({ preventScroll: true });
    } else {
      goTo(first, false);
    }
  }

  /* groupDigits writes a count as the server does: 10000 is "10 000"
     (a no-break space between groups of three). */
  function groupDigits(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, '\u00a0');
  }

  /* refresh recounts what the header, the title and the parent window show. */
  var lastPosted = -1;
  function refresh() {
    // What counts as waiting is the server's verdict (data-pending): an
    // informational or malformed card is shown, never counted.
    var shown = cards('#open [data-pending="true"]').length;
    var pending = shown + inbox.offPage;
    // "Showing 550 of 2 000 pending" counts as the header does.
    var pager = doc.querySelector('[data-testid="pager-text"][data-template]');
    if (pager) {
      pager.textContent = pager.dataset.template.replace('{shown}', groupDigits(shown)).replace('{total}', groupDigits(pending));
    }
    var pc = byId('pending-count');
    if (pc) {
      pc.textContent = groupDigits(pending) + ' pending';
      pc.dataset.pending = String(pending);
    }
    // "Error: " stays in front while a refused post's summary is shown.
    var error = doc.querySelector('#inbox .error-summary') ? 'Error: ' : '';
    if (pc) doc.title = error + (pending > 0 ? '(' + pending + ') aepforms' : 'aepforms');
    var empty = byId('empty');
    if (empty) empty.hidden = !!doc.querySelector('#open .card, #open .row');
    var settled = cards('#settled-list .card').length;
    var sec = byId('settled');
    if (sec) {
      sec.hidden = settled === 0;
      var n = sec.querySelector('.section-title__count');
      if (n) n.textContent = '(' + settled + ')';
    }
    // A group whose cards are all hidden goes with them; so does the
    // settled section, and "Clear settled" shows while it has a card.
    cards('#open .group').forEach(function (g) {
      g.hidden = !g.querySelector('.card:not(.is-hidden), .row');
    });
    var settledShown = cards('#settled-list .card:not(.is-hidden)').length;
    if (sec && settled > 0) sec.hidden = settledShown === 0;
    var clear = doc.querySelector('[data-action="clear-settled"]');
    if (clear) clear.hidden = settledShown === 0;
    var none = byId('no-more');
    if (none && !none.hidden && doc.activeElement !== none && pendingCards().length) none.hidden = true;
    var wd = byId('withdrawn');
    if (wd) {
      var wn = cards('#withdrawn-list .card').length;
      wd.hidden = wn === 0;
      var wc = wd.querySelector('.section-title__count');
      if (wc) wc.textContent = '(' + wn + ')';
    }
    listSoon();
    var hiddenN = cards('.card.is-hidden').length;
    var note = byId('hidden-note');
    if (note) {
      note.hidden = hiddenN === 0;
      note.querySelector('span').textContent = hiddenN + (hiddenN === 1 ? ' card hidden.' : ' cards hidden.');
    }
    unseenShown();
    var nn = byId('new-notice');
    var heldN = held.filter(byId).length;
    if (nn) {
      nn.hidden = heldN === 0;
      nn.querySelector('button').textContent = heldN === 1 ? '1 new question' : heldN + ' new questions';
    }
    if (pending !== lastPosted) {
      lastPosted = pending;
      postPending(pending);
    }
  }

  /* The panel tells its parent how many questions wait, at the allowed
   * embedding origins only (never "*"). */
  function postPending(n) {
    if (ds.panel !== 'true' || window.parent === window) return;
    (ds.embedOrigins || '').split(/\s+/).filter(Boolean).forEach(function (origin) {
      try {
        window.parent.postMessage({ type: 'aepforms:pending', pending: n }, origin);
      } catch (e) { /* a malformed origin: skip it */ }
    });
  }

  var source = null;
  var lastId = '';
  var retry = 1000;
  var reconnectTimer = 0;
  function connect() {
    if (!ds.push || !window.EventSource) return;
    if (source) source.close(); // never two streams
    var url = ds.push;
    if (lastId) url = url.replace(/([?&])since=[^&]*/, '$1since=' + encodeURIComponent(lastId));
    source = new EventSource(url);
    source.onopen = function () { live = true; retry = 1000; renderConn(); };
    source.onerror = function () {
      live = false;
      renderConn();
      probe();
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (an HTTP error): try again, slower each time.
        reconnect(retry);
        retry = Math.min(retry * 2, 30000);
      }
    };
    function track(fn) {
      return function (e) {
        if (e.lastEventId) lastId = e.lastEventId;
        fn(e.data);
      };
    }
    source.addEventListener('card', track(onCard));
    source.addEventListener('remove', track(onRemove));
    source.addEventListener('status', track(onStatus));
    source.addEventListener('batches', function (e) { onBatches(e.data); });
    source.addEventListener('reload', function (e) {
      source.close();
      if (e.data === 'another server') {
        // Not the server that drew the page: it restarted, or another
        // replica took the stream. Its positions say nothing of this
        // page's: the page is reconciled with what it holds instead.
        reconcile();
        return;
      }
      window.location.reload();
    });
  }

  /* reconcile brings the page in line with a server that did not draw it
   * (a restart, another replica): it reads the page anew and withdraws
   * the waiting cards that server does not hold (their drafts kept, shown
   * read-only, nothing to send), puts in the cards it holds that the page
   * lacks, replaces the ones the operator is not working in, and follows
   * that server's stream from the page it drew. */
  var reconciling = false;
  function reconcile() {
    if (reconciling) return;
    reconciling = true;
    live = false;
    renderConn();
    window.fetch(window.location.href, { cache: 'no-store', credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (res) {
        if (!res.ok) throw new Error('status ' + res.status);
        return res.text();
      })
      .then(function (html) {
        reconciling = false;
        var fresh = new DOMParser().parseFromString(html, 'text/html');
        var box = fresh.getElementById('inbox');
        if (!box || !fresh.body || !fresh.body.dataset.push) {
          window.location.reload(); // not the inbox (a sign-in): draw it anew, drafts survive
          return;
        }
        var have = {};
        Array.prototype.forEach.call(box.querySelectorAll('.card[id], .row[id]'), function (el) { have[el.id] = el; });
        cards('#open .card, #open .row').forEach(function (c) {
          if (!have[c.id]) withdraw(c);
        });
        inbox.after = box.dataset.pageAfter || '';
        inbox.until = box.dataset.pageUntil || '';
        inbox.offPage = Number(box.dataset.offPage || 0);
        Object.keys(have).forEach(function (id) {
          var el = have[id];
          var old = byId(id);
          if (old && old.dataset.withdrawn === 'true') {
            onCard(el.outerHTML); // withdrawn before, held again: it comes back
            return;
          }
          if (old && !old.dataset.row && !el.classList.contains('row') && busy(old)) {
            updateState(old, el); // the operator is in it: its text stays
            return;
          }
          if (old) old.dataset.version = '-1'; // that server's versions start anew
          onCard(el.outerHTML);
        });
        var st = fresh.getElementById('banners');
        if (st) onStatus(st.outerHTML);
        if (fresh.body.dataset.now) {
          var skew = Date.parse(fresh.body.dataset.now) - Date.now();
          if (!isNaN(skew)) serverSkew = skew;
        }
        ds.push = fresh.body.dataset.push;
        lastId = '';
        retry = 1000;
        connect();
      })
      .catch(function () {
        // Gone again (or not there yet): the stream is tried again, and
        // its answer starts the reconciling over.
        reconciling = false;
        probe();
        reconnect(retry);
        retry = Math.min(retry * 2, 30000);
      });
  }

  /* withdraw marks a card the server no longer holds: read-only, its
   * state line saying so, nothing to send; the operator's draft stays
   * (in the card and in this browser). A row has nothing typed: it goes. */
  function withdraw(card) {
    if (card.dataset.withdrawn === 'true') return;
    if (card.dataset.row || (card.dataset.held === 'true' && !busy(card))) {
      card.remove();
      tidyGroups();
      refresh();
      return;
    }
    card.dataset.withdrawn = 'true';
    card.dataset.pending = 'false'; // the server holds it no more: not waiting here
    delete card.dataset.held;
    card.hidden = false;
    lock(card, '');
    card.classList.add('is-withdrawn');
    var line = doc.createElement('div');
    line.className = 'state state--warning';
    line.dataset.state = 'withdrawn';
    line.dataset.testid = 'withdrawn';
    line.setAttribute('role', 'status');
    var p = doc.createElement('p');
    p.className = 'state__text';
    p.textContent = ds.withdrawnText || '';
    line.appendChild(p);
    var st = card.querySelector('.state');
    if (st) {
      line.id = st.id;
      st.replaceWith(line);
    } else {
      var head = card.querySelector('.card__head');
      if (head) head.after(line); else card.prepend(line);
    }
    // Out of the questions waiting, into the withdrawn group (a
    // question's own page keeps it where it is).
    var gone = byId('withdrawn-list');
    if (gone && !inbox.single && card.closest('#open')) {
      var a = doc.activeElement;
      var had = a && card.contains(a) ? a : null;
      gone.appendChild(card);
      tidyGroups();
      if (had) had.focus({ preventScroll: true });
    }
    refresh();
  }
  // reconnect opens the stream again after wait, once however many ask;
  // an ask that is due sooner (the probe found the server back while a
  // long backoff was pending) moves the pending one up.
  var reconnectDue = 0;
  function reconnect(wait) {
    var due = Date.now() + wait;
    if (reconnectTimer) {
      if (due >= reconnectDue) return;
      window.clearTimeout(reconnectTimer);
    }
    reconnectDue = due;
    reconnectTimer = window.setTimeout(function () { reconnectTimer = 0; connect(); }, wait);
  }

  /* ---------- this UI's own server, reachable or not ---------- */

  /* When the push stream fails, probe() asks {base}/healthz. Unreachable:
   * the banner the server rendered shows, the send buttons are disabled
   * and drafts stay; probing goes on, slower each time, until the server
   * answers, then sending comes back and the stream reconnects. */
  var reachable = true;
  var probeWait = 1000;
  var probing = false;
  function setReachable(ok) {
    if (ok === reachable) return;
    reachable = ok;
    renderConn();
    var banner = byId('unreachable');
    if (banner) banner.hidden = ok;
    cards('form[data-card] button[type="submit"]').forEach(function (b) {
      if (b.classList.contains('enter-guard')) return;
      if (!ok && !b.disabled) { b.disabled = true; b.dataset.offline = 'true'; }
      if (ok && b.dataset.offline && !b.closest('[data-withdrawn="true"]')) { b.disabled = false; delete b.dataset.offline; }
    });
    cards('form[data-card]').forEach(function (f) { if (ok) delete f.dataset.sent; });
  }
  function probe() {
    if (probing) return;
    probing = true;
    var url = (ds.base || '') + '/healthz';
    window.fetch(url, { cache: 'no-store', credentials: 'same-origin' }).then(function (r) {
      probing = false;
      probeWait = 1000;
      setReachable(true);
      if (source && source.readyState === EventSource.CLOSED) reconnect(0);
      return r;
    }, function () {
      probing = false;
      setReachable(false);
      window.setTimeout(probe, probeWait);
      probeWait = Math.min(probeWait * 2, 10000);
    });
  }

  /* ---------- a page of many: cards, rows and the pages past them ---------- */

  var inboxEl = byId('inbox');
  var inbox = {
    limit: inboxEl && inboxEl.dataset.pageCards !== undefined ? Number(inboxEl.dataset.pageCards) : -1,
    after: inboxEl ? inboxEl.dataset.pageAfter || '' : '',
    until: inboxEl ? inboxEl.dataset.pageUntil || '' : '',
    offPage: inboxEl ? Number(inboxEl.dataset.offPage || 0) : 0,
    // single: one question's own page, the DOM id of its card.
    single: inboxEl ? inboxEl.dataset.single || '' : '',
    busy: false
  };

  /* outside: a request whose place is on another page. */
  function outside(card) {
    var k = card.dataset.sort || '';
    return (inbox.until !== '' && k > inbox.until) || (inbox.after !== '' && k <= inbox.after);
  }
  /* offPage: a waiting request that belongs to another page. */
  function offPage(card) { return card.dataset.settled !== 'true' && outside(card); }

  /* countOffPage keeps the pending count of the other pages: a new
   * request there (its first version) counts once, one that settles
   * there stops counting once. A new request that is not pending (an
   * informational or malformed one, which the server never counts) is
   * neither counted nor subtracted when it settles. An update of a
   * request the page already counted at load (a later version) changes
   * nothing. Requests dropped from other pages are not seen: the count
   * may then run high until the page is loaded again. */
  var offSeen = {};
  function countOffPage(card) {
    var was = offSeen[card.id];
    if (card.dataset.settled === 'true') {
      if (was === 'settled' || was === 'uncounted') return;
      offSeen[card.id] = 'settled';
      if (inbox.offPage > 0) inbox.offPage--;
      return;
    }
    if (!was && card.dataset.version === '1') {
      if (card.dataset.pending !== 'true') {
        offSeen[card.id] = 'uncounted';
        return;
      }
      offSeen[card.id] = 'open';
      inbox.offPage++;
    }
  }

  /* swap fetches url (a card's fragment or its row) and puts what comes
   * back in place of el, unless el changed meanwhile. */
  function swap(el, url, then) {
    inbox.busy = true;
    var version = el.dataset.version;
    return fetch(url, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (res) {
        if (!res.ok) throw new Error('status ' + res.status);
        return res.text();
      })
      .then(function (html) {
        inbox.busy = false;
        var fresh = parse(html).firstElementChild;
        if (!fresh || !el.isConnected || el.dataset.version !== version) return null;
        if (!el.dataset.row && busy(el)) return null;
        el.replaceWith(fresh);
        dropDrafts(fresh);
        if (fresh.classList.contains('card')) enhance(fresh);
        if (then) then(fresh);
        tidyGroups();
        refresh();
        return fresh;
      }, function () { inbox.busy = false; return null; });
  }

  /* openRow shows a row's card in place; without a fetch, the link's
   * own page. The card stays open (data-opened) however many arrive. */
  function openRow(a) {
    var row = a.closest('.row');
    if (!row) return;
    swap(row, a.dataset.fragment, function (card) {
      card.dataset.opened = 'true';
      var t = card.querySelector('.card__title');
      if (t) { t.setAttribute('tabindex', '-1'); t.focus(); }
    }).then(function (card) { if (!card && row.isConnected) window.location.assign(a.href); });
  }

  /* balance keeps the page's N most urgent waiting requests as cards:
   * the least urgent card past N becomes a row, the most urgent row
   * becomes a card while fewer than N are shown. Cards the operator
   * opened, is working in or has not seen yet (held) stay as they are. */
  function balance() {
    if (inbox.limit < 0 || inbox.busy) return;
    var full = cards('#open .card').filter(function (c) {
      return c.dataset.opened !== 'true' && c.dataset.held !== 'true';
    });
    if (full.length > inbox.limit) {
      var movable = full.filter(function (c) { return !busy(c); });
      if (!movable.length) return;
      var last = movable.reduce(function (a, b) { return b.dataset.sort > a.dataset.sort ? b : a; });
      swap(last, (ds.base || '') + '/cards/' + encodeURIComponent(last.dataset.card) + '/row').then(function (r) { if (r) balance(); });
      return;
    }
    if (full.length < inbox.limit) {
      var rows = cards('#open .row');
      if (!rows.length) return;
      var first = rows.reduce(function (a, b) { return b.dataset.sort < a.dataset.sort ? b : a; });
      var link = first.querySelector('[data-fragment]');
      if (link) swap(first, link.dataset.fragment).then(function (c) { if (c) balance(); });
    }
  }

  /* ---------- the list of the questions waiting (#qlist) ----------
   * One line per question waiting on the page (its cards and rows):
   * agent, kind, the question's first line, deadline, in the order the
   * operator chose (nearest deadline first, oldest first, by agent;
   * permissions may be pinned first). At 1024 px and wider it sits beside
   * the cards, which scroll to the question selected; narrower it sits
   * above them, and at phone width a line opens its question full screen
   * (Back returns to the list). j / k move the selection through the
   * list, fetching the next page past its last line; they never wrap.
   * The selection is the URL's #card-{id} (and this browser's last), so
   * it survives pushes, reloads and restarts. The lines are drawn from
   * the cards and rows: what a question is stays the server's verdict. */

  var qlist = byId('qlist');
  var qitems = byId('qlist-items');
  var LIST_ORDER = 'aepforms:list-order';
  var LIST_PIN = 'aepforms:list-pin';
  var SELECTED = 'aepforms:selected';
  var ql = {
    on: !!(qlist && qitems && !inbox.single && ds.panel !== 'true'),
    lines: {}, // DOM id -> its line (<li>)
    order: [], // DOM ids, in the list's order
    sel: '', // the DOM id selected
    soft: false, // sel is the page's first, not yet chosen: j / k start on it
    selRec: null, // what sorts the selection, to find its place once it left
    selEl: null,
    rows: {}, // DOM id -> the row a card opened from the list replaced
    loading: false, // a row's card is on its way
    fetching: false, // the next page is on its way
    queued: 0, // j / k pressed while it was
    next: '', // the next page's address
    timer: 0
  };

  function listItems() {
    return cards('#open .card, #open .row').filter(function (el) {
      return !el.hidden && !el.classList.contains('is-hidden') && el.dataset.settled !== 'true';
    });
  }
  function recOf(el) {
    return { id: el.id, sort: el.dataset.sort || '', kind: el.dataset.kind || '', agent: el.dataset.groupLabel || '' };
  }
  function listCompare() {
    var order = byId('qlist-order') ? byId('qlist-order').value : 'deadline';
    var pin = !!(byId('qlist-pin') && byId('qlist-pin').checked);
    function str(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
    return function (a, b) {
      if (pin) {
        var p = (a.kind === 'permission' ? 0 : 1) - (b.kind === 'permission' ? 0 : 1);
        if (p) return p;
      }
      // The sort key is "{deadline ms}-{asked ms}-{id}", 19 digits each.
      if (order === 'oldest') { var o = str(a.sort.slice(20, 39), b.sort.slice(20, 39)); if (o) return o; }
      if (order === 'agent') { var g = str(a.agent.toLowerCase(), b.agent.toLowerCase()); if (g) return g; }
      return str(a.sort, b.sort);
    };
  }

  /* fillLine draws el's line: agent, kind, first line, deadline. */
  function fillLine(li, el) {
    var row = !!el.dataset.row;
    var a = li.firstElementChild;
    a.replaceChildren();
    var label = el.dataset.groupLabel || '';
    var agent = doc.createElement('span');
    agent.className = 'qline__agent';
    agent.textContent = label.split(' · session ')[0];
    agent.title = label;
    var kindEl = el.querySelector(row ? '.row__kind' : '.card__kind');
    var kind = doc.createElement('span');
    kind.className = 'qline__kind';
    // Its first word ("Permission" for "Permission request"): the line
    // keeps its room for the question.
    var kindText = kindEl ? kindEl.textContent.trim() : '';
    kind.textContent = kindText.split(' ')[0];
    if (kind.textContent !== kindText) kind.title = kindText;
    var gistEl = el.querySelector(row ? '.row__question' : '.card__question');
    var gist = doc.createElement('bdi');
    gist.className = 'qline__gist';
    gist.textContent = (gistEl || kindEl || el).textContent.trim();
    a.append(agent, kind, gist);
    var claimEl = el.querySelector('[data-testid="claim"]');
    if (claimEl) {
      // Who is on it, so a glance down the list shows what is taken:
      // the card's own words ("ann is on it · 2 min") in its title and
      // for a screen reader, the name on the line (marked when it is
      // the operator's own).
      var mine = claimEl.classList.contains('claim--mine');
      var words = claimEl.textContent.replace(/\s+/g, ' ').trim();
      var claimTag = doc.createElement('span');
      claimTag.className = 'qline__claim' + (mine ? ' qline__claim--mine' : '');
      claimTag.dataset.claimant = claimEl.dataset.claimant || '';
      claimTag.title = words;
      var who = doc.createElement('bdi');
      who.setAttribute('aria-hidden', 'true');
      who.textContent = claimEl.dataset.claimant || '';
      var said = doc.createElement('span');
      said.className = 'visually-hidden';
      said.textContent = words;
      claimTag.append(who, said);
      a.appendChild(claimTag);
    }
    var t = el.querySelector('time[data-deadline]');
    if (t) {
      var box = doc.createElement('span');
      box.className = 'qline__deadline ' + t.parentNode.className.replace(/\brow__deadline\b/, '');
      box.dataset.leftText = t.parentNode.dataset.leftText || '';
      box.dataset.passedText = t.parentNode.dataset.passedText || '';
      box.appendChild(t.cloneNode(true));
      a.appendChild(box);
    }
    li.dataset.kind = el.dataset.kind || '';
    li.dataset.pending = el.dataset.pending || '';
    li.dataset.ver = lineVer(el);
  }
  /* lineVer is what a line is drawn from: a card whose claim line was
   * swapped in place (its form busy) keeps its version. */
  function lineVer(el) {
    var c = el.querySelector('[data-testid="claim"]');
    return el.dataset.version + (el.dataset.row ? 'r' : 'c') + el.dataset.pending + el.className +
      (c ? '|' + (c.dataset.claimant || '') + (c.classList.contains('claim--mine') ? '+' : '') : '');
  }
  function makeLine(el) {
    var li = doc.createElement('li');
    li.className = 'qline';
    li.dataset.for = el.id;
    li.dataset.testid = 'qline';
    var a = doc.createElement('a');
    a.className = 'qline__link';
    a.dataset.action = 'select-line';
    a.href = (ds.base || '') + '/cards/' + encodeURIComponent(el.dataset.card) + '/page';
    li.appendChild(a);
    fillLine(li, el);
    return li;
  }

  function listSoon() {
    if (ql.on && !ql.timer) ql.timer = window.requestAnimationFrame(syncList);
  }

  /* syncList brings the lines in line with the page's cards and rows. */
  function syncList() {
    if (ql.timer) window.cancelAnimationFrame(ql.timer);
    ql.timer = 0;
    if (!ql.on) return;
    var seen = {};
    var recs = listItems().map(function (el) {
      seen[el.id] = true;
      var li = ql.lines[el.id];
      if (!li) li = ql.lines[el.id] = makeLine(el);
      else if (li.dataset.ver !== lineVer(el)) fillLine(li, el);
      var r = recOf(el);
      r.li = li;
      return r;
    });
    Object.keys(ql.lines).forEach(function (id) {
      if (!seen[id]) { ql.lines[id].remove(); delete ql.lines[id]; }
    });
    recs.sort(listCompare());
    var prev = null;
    recs.forEach(function (r) {
      var want = prev ? prev.nextSibling : qitems.firstChild;
      if (want !== r.li) qitems.insertBefore(r.li, want);
      prev = r.li;
    });
    ql.order = recs.map(function (r) { return r.id; });
    var n = byId('qlist-count');
    // Counted as the header counts: what waits for an answer (an
    // informational question has a line, and no count).
    var waiting = recs.filter(function (r) { return r.li.dataset.pending === 'true'; }).length;
    if (n) n.textContent = '(' + groupDigits(waiting) + (ql.next ? '+' : '') + ')';
    if (!ql.sel && recs.length) { ql.sel = recs[0].id; ql.soft = true; }
    markSelected();
  }

  /* markSelected shows the selection: its line (aria-current) and its
   * card or row. */
  function markSelected() {
    var was = qitems.querySelector('.qline.is-selected');
    var li = ql.lines[ql.sel];
    if (was && was !== li) { was.classList.remove('is-selected'); was.firstElementChild.removeAttribute('aria-current'); }
    if (li && !li.classList.contains('is-selected')) { li.classList.add('is-selected'); li.firstElementChild.setAttribute('aria-current', 'true'); }
    var el = ql.sel ? byId(ql.sel) : null;
    if (ql.selEl && ql.selEl !== el) ql.selEl.classList.remove('is-sel');
    if (el) { el.classList.add('is-sel'); ql.selRec = recOf(el); }
    ql.selEl = el;
  }

  /* select makes id the selection (the URL and this browser remember it);
   * a card the list opened from a row goes back to its row once left. */
  function select(id) {
    if (!ql.on || !id) return;
    ql.soft = false;
    if (ql.sel === id) return;
    var prev = ql.sel;
    ql.sel = id;
    markSelected();
    unopen(prev);
    remember();
  }

  /* remember writes the selection into the URL and this browser, at most
   * every data-url-every ms (--url-every, 250 by default: the browser
   * limits how often a page may rewrite its address; j held down moves
   * faster), the last one always. */
  var rememberAt = 0;
  var rememberTimer = 0;
  var urlEvery = Number(document.body.dataset.urlEvery) > 0 ? Number(document.body.dataset.urlEvery) : 250;
  function remember() {
    if (rememberTimer) return;
    var wait = rememberAt + urlEvery - Date.now();
    if (wait > 0) { rememberTimer = window.setTimeout(function () { rememberTimer = 0; remember(); }, wait); return; }
    rememberAt = Date.now();
    if (window.location.hash !== '#' + ql.sel) {
      try { window.history.replaceState(window.history.state, '', '#' + ql.sel); } catch (e) { /* a sandboxed frame */ }
    }
    save(SELECTED, ql.sel);
  }

  function unopen(id) {
    var row = ql.rows[id];
    var card = byId(id);
    if (!row || !card || card.dataset.row) return;
    if (busy(card) || card.dataset.open !== 'true' || card.dataset.settled === 'true' || !card.closest('#open')) {
      delete ql.rows[id];
      return;
    }
    delete ql.rows[id];
    row.dataset.version = card.dataset.version;
    row.dataset.pending = card.dataset.pending;
    card.replaceWith(row);
    listSoon();
  }

  /* loadRow fetches the selected row's card into its place, one fetch at a
   * time: a selection that moved on meanwhile is fetched next. */
  function loadRow() {
    var row = byId(ql.sel);
    if (ql.loading || !row || !row.dataset.row) return;
    var link = row.querySelector('[data-fragment]');
    if (!link || !window.fetch) return;
    ql.loading = true;
    var version = row.dataset.version;
    window.fetch(link.dataset.fragment, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (html) {
        ql.loading = false;
        var fresh = html ? parse(html).firstElementChild : null;
        if (fresh && fresh.id === row.id && row.isConnected && row.dataset.version === version && ql.sel === row.id) {
          var a = doc.activeElement;
          var follow = !a || a === body || row.contains(a);
          row.replaceWith(fresh);
          ql.rows[fresh.id] = row;
          fresh.dataset.opened = 'true';
          dropDrafts(fresh);
          enhance(fresh);
          markCurrent(fresh);
          refresh();
          if (follow) { fresh.scrollIntoView({ block: 'start' }); cardHeading(fresh).focus({ preventScroll: true }); }
        }
        if (ql.sel !== row.id) loadRow();
      }, function () { ql.loading = false; });
  }

  /* openItem brings the question el into view, selected: a card's
   * heading takes focus; a row's card is fetched into its place. At
   * phone width it opens full screen. */
  function openItem(el) {
    select(el.id);
    var li = ql.lines[el.id];
    if (li) li.scrollIntoView({ block: 'nearest' });
    if (el.dataset.row) {
      markCurrent(null);
      el.scrollIntoView({ block: 'start' });
      var link = el.querySelector('[data-testid="row-link"]');
      if (link) link.focus({ preventScroll: true });
      loadRow();
    } else {
      goTo(el, false);
    }
    if (phone()) openFull();
  }

  function phone() { return window.matchMedia && window.matchMedia('(max-width: 40rem)').matches; }

  /* openFull shows the selected question alone (phone width); Back (the
   * button or the browser's) returns to the list. */
  function openFull() {
    var root = doc.documentElement;
    if (root.classList.contains('q-open')) return;
    root.classList.add('q-open');
    byId('qback').hidden = false;
    try { window.history.pushState({ aepformsOpen: ql.sel }, '', '#' + ql.sel); } catch (e) { /* a sandboxed frame */ }
    window.scrollTo(0, 0);
  }
  function closeFull() {
    var root = doc.documentElement;
    if (!root.classList.contains('q-open')) return;
    root.classList.remove('q-open');
    var li = ql.lines[ql.sel];
    if (li) {
      li.firstElementChild.focus({ preventScroll: true });
      li.scrollIntoView({ block: 'center' });
    }
    byId('qback').hidden = true;
  }
  window.addEventListener('popstate', function (e) {
    if (e.state && e.state.aepformsOpen) return;
    closeFull();
    // The browser's Back puts focus back on the page once this returns:
    // on the line the operator left, once more.
    window.setTimeout(function () {
      var li = ql.lines[ql.sel];
      var a = doc.activeElement;
      if (li && (!a || a === body)) li.firstElementChild.focus({ preventScroll: true });
    }, 0);
  });

  /* waitingIds are the list's questions j / k visit: waiting for an
   * answer by the server's verdict (data-pending), not locked. */
  function waitingIds(withForm) {
    return ql.order.filter(function (id) {
      var el = byId(id);
      if (!el || el.dataset.pending !== 'true' || el.classList.contains('is-locked') || el.dataset.withdrawn === 'true') return false;
      return !withForm || !!el.dataset.row || !!el.querySelector('form[data-card]');
    });
  }

  /* placeOf is where the selection stands among ids: its index, or, once
   * it left the list (answered, settled elsewhere), the index it would
   * have (ids after it start there). */
  function placeOf(ids) {
    var at = ids.indexOf(ql.sel);
    if (at >= 0 || !ql.selRec) return { at: at, gone: false };
    var cmp = listCompare();
    var i = 0;
    while (i < ids.length && cmp(recOf(byId(ids[i])), ql.selRec) < 0) i++;
    return { at: i, gone: true };
  }

  /* edge says the list ends here (j past the last, k before the first),
   * and moves nothing. */
  function edge(first) {
    var note = byId('qlist-edge');
    if (!note) return;
    note.textContent = first ? note.dataset.firstText : note.dataset.endText;
  }
  function edgeClear() {
    var note = byId('qlist-edge');
    if (note && note.textContent) note.textContent = '';
  }

  /* step moves the selection dir (1: j, -1: k) through the questions
   * waiting, n of them at once (1 unless keys were pressed while the next
   * page loaded); extend (Shift) selects for a batch answer as it goes. */
  function step(dir, extend, n) {
    n = n || 1;
    if (ql.fetching) { ql.queued += dir * n; return; }
    if (ql.timer) syncList(); // the page changed since the lines were drawn
    var ids = waitingIds(false);
    var p = placeOf(ids);
    // from: where the selection stands, as an index (a selection not
    // chosen yet stands just before the first; one that left the list,
    // between its neighbours).
    var from;
    if (p.at < 0) from = dir > 0 ? -1 : ids.length;
    else if (ql.soft) from = p.at - dir;
    else if (p.gone) from = dir > 0 ? p.at - 1 : p.at;
    else from = p.at;
    var to = from + dir * n;
    if (to >= ids.length) {
      if (ql.next) {
        // On the next page: the moves left go on once it is here.
        var last = ids.length - 1;
        if (last >= 0 && last !== from) openItem(byId(ids[last]));
        ql.queued += to - last;
        fetchNext();
        return;
      }
      edge(false);
      return;
    }
    if (to < 0) {
      // On a page after the first, k goes on to the previous page's last
      // question (as j goes on to the next page's first).
      var box = byId('inbox');
      if (box && box.dataset.prevLast) { window.location.assign(box.dataset.prevLast); return; }
      edge(true);
      return;
    }
    edgeClear();
    if (extend) pickSel();
    openItem(byId(ids[to]));
    if (extend) pickSel();
  }

  /* pickSel selects the selected card for a batch answer (Shift+j/k). */
  function pickSel() {
    var c = byId(ql.sel);
    var box = c && c.querySelector('[data-batch-pick]');
    if (box && !box.checked && !box.closest('[data-testid="batch-pick"]').hidden) batchToggle(c);
  }

  /* fetchNext reads the next page and adds its questions to this one:
   * the list goes on, the push stream follows the wider page. */
  function fetchNext() {
    if (ql.fetching || !ql.next || !window.fetch) return;
    ql.fetching = true;
    window.fetch(ql.next, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (res) {
        if (!res.ok) throw new Error('status ' + res.status);
        return res.text();
      })
      .then(function (html) {
        var d = new DOMParser().parseFromString(html, 'text/html');
        var box = d.getElementById('inbox');
        if (!box) throw new Error('no inbox in the answer');
        Array.prototype.forEach.call(box.querySelectorAll('#open .card, #open .row'), function (el) {
          if (byId(el.id)) return;
          var node = doc.importNode(el, true);
          place(node);
          if (node.classList.contains('card')) enhance(node);
        });
        // The other pages' pending count: the next page's, less what of
        // it this page now shows.
        var theirs = box.querySelectorAll('#open [data-pending="true"]').length;
        var mine = cards('#open [data-pending="true"]').length;
        inbox.offPage = Math.max(0, Number(box.dataset.offPage || 0) + theirs - mine);
        inbox.until = box.dataset.pageUntil || '';
        var nx = d.querySelector('[data-testid="next-page"]');
        ql.next = nx ? new URL(nx.getAttribute('href'), window.location.href).href : '';
        cards('[data-testid="next-page"]').forEach(function (a) {
          if (ql.next) a.href = ql.next; else a.remove();
        });
        var push = ds.push.replace(/&until=[^&]*/, '');
        if (inbox.until) push += '&until=' + encodeURIComponent(inbox.until);
        if (push !== ds.push) { ds.push = push; connect(); }
        tidyGroups();
        refresh();
        ql.fetching = false;
        syncList();
        var q = ql.queued;
        ql.queued = 0;
        if (q) step(q > 0 ? 1 : -1, false, Math.abs(q));
      })
      .catch(function () {
        // Not read (the server gone, a sign-in): j says so at the end, and
        // tries again on the next press.
        ql.fetching = false;
        ql.queued = 0;
      });
  }

  function startList() {
    if (!ql.on) return;
    qlist.hidden = false;
    doc.documentElement.classList.add('qlist-on');
    var main = byId('main');
    if (main) main.classList.add('has-qlist');
    var order = byId('qlist-order');
    var pin = byId('qlist-pin');
    order.value = load(LIST_ORDER, 'deadline');
    if (!order.value) order.value = 'deadline';
    pin.checked = load(LIST_PIN, false) === true;
    var nx = doc.querySelector('[data-testid="next-page"]');
    if (nx) ql.next = nx.href;
    var want = window.location.hash.slice(1) || load(SELECTED, '');
    syncList();
    if (want && ql.lines[want]) {
      ql.sel = want;
      ql.soft = false;
      markSelected();
      var el = byId(want);
      ql.lines[want].scrollIntoView({ block: 'nearest' });
      if (el.dataset.row) loadRow();
      else markCurrent(el);
      if (window.location.hash.slice(1) === want) el.scrollIntoView({ block: 'start' });
    }
    // Lines brought into view clear the list's own heading.
    var head = qlist.querySelector('.qlist__head');
    var pad = function () { qlist.style.scrollPaddingTop = head.offsetHeight + 'px'; };
    pad();
    if (window.ResizeObserver) new ResizeObserver(pad).observe(head);
    qlist.addEventListener('change', function (e) {
      if (e.target === order) save(LIST_ORDER, order.value);
      if (e.target === pin) save(LIST_PIN, pin.checked);
      syncList();
    });
  }

  /* keepFocusOn gives el focus again if the browser dropped it to the
   * body while the page's first layout settled (the list beside the
   * cards lays out after the script starts), within the first second. */
  function keepFocusOn(el) {
    var until = Date.now() + 1000;
    var again = function () {
      if (doc.activeElement === body && el.isConnected) el.focus({ preventScroll: true });
      if (doc.activeElement === el && Date.now() < until) window.requestAnimationFrame(again);
    };
    window.requestAnimationFrame(again);
  }

  /* ---------- countdowns ---------- */

  function clock(ms) {
    var s = Math.ceil(ms / 1000);
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, sec = s % 60;
    var mm = h > 0 && m < 10 ? '0' + m : String(m);
    return (h > 0 ? h + ':' : '') + mm + ':' + (sec < 10 ? '0' : '') + sec;
  }

  /* tick counts the deadlines down. It decides nothing: at zero it
   * shows the server's words (data-passed-text) and locks nothing; the
   * server's sweep settles the card and pushes its locked version. */
  function tick() {
    cards('time[data-deadline]').forEach(function (t) {
      var left = Date.parse(t.dataset.deadline) - now();
      var box = t.parentNode;
      if (left > 0) {
        t.textContent = (box.dataset.leftText || '%s').replace('%s', clock(left));
        box.classList.toggle('is-soon', left < 60000);
        return;
      }
      if (box.dataset.passedText) t.textContent = box.dataset.passedText;
    });
  }

  /* ---------- relative times ("2 min ago"), rewritten as they age ---------- */

  var REL = /^(just now|\d+ (min|h|d) ago)$/;
  /* relTime says how long ago a time was, in the words the server used
   * (internal/render/view/format.go relTime). */
  function relTime(ms) {
    var s = ms / 1000;
    if (s < 45) return 'just now';
    if (s < 90) return '1 min ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    if (s < 48 * 3600) return Math.floor(s / 3600) + ' h ago';
    return Math.floor(s / 86400) + ' d ago';
  }
  function ageTimes() {
    cards('time[datetime]:not([data-deadline])').forEach(function (t) {
      var text = t.textContent.trim();
      if (t.dataset.rel !== 'true' && !REL.test(text)) return;
      var at = Date.parse(t.getAttribute('datetime'));
      if (isNaN(at)) return;
      t.dataset.rel = 'true';
      var words = relTime(now() - at);
      if (words !== text) t.textContent = words;
    });
  }

  /* ---------- answering many at once (#batch-region) ----------
   * An open card the server finds selectable carries data-batch-shape and
   * a hidden "Select for a batch answer" (batchPick). The region (folded)
   * holds one answer form per shape two or more questions share. The
   * picks of a shape show while the region has its form; what is picked
   * is kept here by card id, so a pushed new version of a card stays
   * picked. The region's counts come from the server as one pushed
   * summary (the `batches` event: JSON {count, groups: [{shape, n, text}]},
   * the same message to every page of a filter, at most one a
   * --batch-push-interval); the page fetches the region (?region=1) only
   * when the summary names a group it has never drawn, or when the
   * operator opens the region after such a fetch failed, and then once
   * for a burst. Its form is posted with fetch, the picked
   * ids added; the outcome list shows under the form and each card shows
   * its own outcome by push. */
  var picked = {}; // card id -> shape
  var batchTimer = 0;
  var batchFetching = false;
  var batchWant = false; // a group is named that the region has not drawn
  var batchFetchTimer = 0;

  function batchRegion() { return byId('batch-region'); }
  function batchGroupOf(shape) {
    var r = batchRegion();
    return r ? r.querySelector('[data-testid="batch"][data-shape="' + shape + '"]') : null;
  }

  /* batchCounts: the open cards of each shape on the page. */
  function batchCounts() {
    var n = {};
    cards('#open .card[data-batch-shape]').forEach(function (c) {
      if (c.dataset.withdrawn === 'true' || c.dataset.open !== 'true') return;
      var sh = c.dataset.batchShape;
      n[sh] = (n[sh] || 0) + 1;
    });
    return n;
  }

  /* batchSync shows the picks of the shapes the region has a form for,
   * keeps what is picked, and counts it in the region. */
  function batchSync() {
    batchTimer = 0;
    var region = batchRegion();
    if (!region) return;
    var live = {};
    cards('#open .card[data-batch-shape]').forEach(function (c) {
      var sh = c.dataset.batchShape;
      var box = c.querySelector('[data-batch-pick]');
      if (!box) return;
      var g = batchGroupOf(sh);
      var on = !!g && !g.querySelector('form[hidden]') && c.dataset.open === 'true' && c.dataset.withdrawn !== 'true';
      box.closest('[data-testid="batch-pick"]').hidden = !on;
      box.checked = on && picked[c.dataset.card] === sh;
      if (box.checked) live[c.dataset.card] = sh;
    });
    cards('#open [data-action="batch-go"]').forEach(function (b) {
      var box = b.parentNode.querySelector('[data-batch-pick]');
      var k = 0;
      Object.keys(live).forEach(function (id) { if (live[id] === box.dataset.batchPick) k++; });
      b.hidden = !box.checked;
      var text = k === 1 ? 'Answer the 1 selected' : 'Answer the ' + k + ' selected';
      if (b.textContent !== text) b.textContent = text;
    });
    picked = live; // a card answered, gone or changed is no longer picked
    var any = false;
    region.querySelectorAll('[data-testid="batch"]').forEach(function (g) {
      var k = 0;
      Object.keys(picked).forEach(function (id) { if (picked[id] === g.dataset.shape) k++; });
      var sel = g.querySelector('[data-testid="batch-selected"]');
      var text = k + ' selected';
      if (sel && sel.textContent !== text) sel.textContent = text;
      // A selection emptied (unselected, answered, gone, withdrawn after
      // a restart) ends its answer: the next one starts empty.
      var had = g.classList.contains('has-selection');
      g.classList.toggle('has-selection', k > 0);
      var f = g.querySelector('form');
      if (had && k === 0 && f) batchFormEmpty(f);
      if (k > 0) any = true;
    });
    region.classList.toggle('has-selection', any);
  }
  function batchSoon() {
    if (!batchTimer) batchTimer = window.setTimeout(batchSync, 100);
  }

  /* batchLeave drops a group the server no longer counts, unless the
   * operator is in it (reading its outcomes): then it stays until they
   * leave, saying what is left, its form gone. */
  function batchLeave(g, counts) {
    var a = doc.activeElement;
    if (!(a && g.contains(a))) { g.remove(); return; }
    var c = g.querySelector('[data-testid="batch-count"]');
    if (c) c.textContent = groupDigits(counts[g.dataset.shape] || 0) + ' waiting';
    var f = g.querySelector('form');
    if (f) f.hidden = true;
  }

  /* onBatches applies a pushed summary: counts change, groups gone leave,
   * and a group never drawn asks for one fetch of the region. */
  var batchLast = ''; // the last summary pushed
  var batchSums = 0; // how many were pushed
  function onBatches(data) {
    batchLast = data;
    batchSums++;
    batchApply(data);
  }
  function batchApply(data) {
    var region = batchRegion();
    if (!region) return;
    var sum;
    try { sum = JSON.parse(data); } catch (e) { return; }
    if (!sum || !sum.groups) return;
    var keep = {};
    var missing = false;
    sum.groups.forEach(function (s) {
      keep[s.shape] = true;
      var g = batchGroupOf(s.shape);
      if (!g) { missing = true; return; }
      g.dataset.count = String(s.n);
      var c = g.querySelector('[data-testid="batch-count"]');
      if (c && c.textContent !== s.text) c.textContent = s.text;
    });
    var counts = batchCounts();
    region.querySelectorAll('[data-testid="batch"]').forEach(function (g) {
      if (!keep[g.dataset.shape]) batchLeave(g, counts);
    });
    var count = region.querySelector('[data-testid="batch-region-count"]');
    if (count && count.textContent !== sum.count) count.textContent = sum.count;
    region.hidden = !region.querySelector('[data-testid="batch"]');
    batchWant = missing;
    if (missing) batchFetchSoon();
    batchSync();
  }

  /* batchFetchSoon fetches the region once for a burst of summaries that
   * name a group not drawn yet. */
  function batchFetchSoon() {
    if (!batchFetchTimer) batchFetchTimer = window.setTimeout(function () {
      batchFetchTimer = 0;
      if (batchWant) batchRefetch();
    }, 250);
  }

  /* batchRefetch reads the region from the server for the groups it has
   * not drawn: new groups come in, groups gone leave, counts change; a
   * group's form the operator is in stays as it is. */
  function batchRefetch() {
    var region = batchRegion();
    if (!region || batchFetching || !window.fetch) return;
    batchFetching = true;
    batchWant = false;
    var sums = batchSums;
    var q = window.location.search.replace(/^\?/, '');
    window.fetch(region.dataset.url + (q ? '&' + q : ''), { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (html) {
        batchFetching = false;
        if (!html) return;
        var fresh = parse(html).firstElementChild;
        if (!fresh || fresh.id !== 'batch-region') return;
        var details = region.querySelector('details');
        var into = details;
        var keep = {};
        fresh.querySelectorAll('[data-testid="batch"]').forEach(function (g) {
          keep[g.dataset.shape] = true;
          var old = batchGroupOf(g.dataset.shape);
          if (old) {
            old.dataset.count = g.dataset.count;
            var c = old.querySelector('[data-testid="batch-count"]');
            var nc = g.querySelector('[data-testid="batch-count"]');
            if (c && nc) c.textContent = nc.textContent;
          } else {
            into.appendChild(g);
          }
        });
        var counts = batchCounts();
        region.querySelectorAll('[data-testid="batch"]').forEach(function (g) {
          if (!keep[g.dataset.shape]) batchLeave(g, counts);
        });
        var count = region.querySelector('[data-testid="batch-region-count"]');
        var ncount = fresh.querySelector('[data-testid="batch-region-count"]');
        if (count && ncount) count.textContent = ncount.textContent;
        region.hidden = !region.querySelector('[data-testid="batch"]');
        // A summary pushed while the fetch was on its way is the newer
        // truth: applied again (a group it names that the fetch missed
        // asks for one more).
        if (batchSums > sums) batchApply(batchLast);
        batchSync();
      }, function () { batchFetching = false; batchWant = true; });
  }

  /* batchFormEmpty clears a group's answer once it was sent: the next
   * selection starts from nothing, never from the answer the last
   * questions got. */
  function batchFormEmpty(form) {
    form.reset();
    form.querySelectorAll('details[data-kind="note"]').forEach(function (d) { d.open = false; });
    syncOther(form);
  }

  /* batchToggle picks or unpicks a card (x); false when it has no pick. */
  function batchToggle(card) {
    var box = card.querySelector('[data-batch-pick]');
    if (!box || box.closest('[data-testid="batch-pick"]').hidden) return false;
    box.checked = !box.checked;
    batchPicked(box);
    return true;
  }
  function batchPicked(box) {
    var id = box.value;
    if (box.checked) picked[id] = box.dataset.batchPick;
    else delete picked[id];
    var region = batchRegion();
    if (box.checked && region) {
      var d = region.querySelector('details');
      if (d) d.open = true;
    }
    batchSync();
  }

  doc.addEventListener('change', function (e) {
    if (e.target.matches && e.target.matches('[data-batch-pick]')) batchPicked(e.target);
  });

  /* Shift+click ticks (or unticks) a range: every box of the same batch
   * between the one clicked before and this one takes this one's state,
   * on the batch page (a group's questions) and on the inbox's picks (of
   * one shape). A click on its label counts as one on the box. */
  var lastBox = null;
  function rangeBoxes(box) {
    if (box.classList.contains('batch__check')) {
      var g = box.closest('[data-testid="batch"]');
      return g ? Array.prototype.slice.call(g.querySelectorAll('.batch__check')) : [];
    }
    // Only the picks the page shows: not a card hidden from the page, nor
    // one held back while the operator types (they have not seen it).
    return cards('[data-batch-pick="' + box.dataset.batchPick + '"]').filter(function (b) {
      return b.getClientRects().length > 0;
    });
  }
  doc.addEventListener('click', function (e) {
    var box = e.target;
    if (!box.matches || !box.matches('.batch__check, [data-batch-pick]')) return;
    var list = rangeBoxes(box);
    var from = lastBox && list.indexOf(lastBox);
    lastBox = box;
    if (!e.shiftKey || from === null || from < 0) return;
    var to = list.indexOf(box);
    // The inbox's picks: this box is picked first, or the others' picks
    // would redraw it as it was before this click (batchSync).
    if (box.matches('[data-batch-pick]')) batchPicked(box);
    list.slice(Math.min(from, to), Math.max(from, to) + 1).forEach(function (b) {
      if (b === box || b.disabled || b.checked === box.checked) return;
      b.checked = box.checked;
      changed(b);
    });
  });

  /* "Answer the n selected": to the group's answer, on its first control. */
  doc.addEventListener('click', function (e) {
    var b = e.target.closest && e.target.closest('[data-action="batch-go"]');
    if (!b) return;
    var box = b.parentNode.querySelector('[data-batch-pick]');
    var g = box && batchGroupOf(box.dataset.batchPick);
    if (!g) return;
    var d = g.closest('details');
    if (d) d.open = true;
    var first = g.querySelector('form input:not([type="hidden"]), form select, form textarea, form summary, form button:not([disabled])');
    g.scrollIntoView({ block: 'start' });
    (first || g).focus({ preventScroll: true });
  });

  doc.addEventListener('submit', function (e) {
    var form = e.target;
    if (!form.closest || !form.closest('#batch-region') || e.defaultPrevented || !window.fetch || !window.URLSearchParams) return;
    e.preventDefault();
    var shape = form.dataset.shape;
    var group = form.closest('[data-testid="batch"]');
    var slot = group.querySelector('[data-testid="batch-result-slot"]');
    var data = e.submitter ? new FormData(form, e.submitter) : new FormData(form);
    var ids = Object.keys(picked).filter(function (id) { return picked[id] === shape; });
    ids.forEach(function (id) { data.append('card', id); });
    var done = function (html) {
      delete form.dataset.sent;
      slot.replaceChildren(parse(html));
      var heading = slot.querySelector('h2, h3');
      if (heading) { heading.setAttribute('tabindex', '-1'); heading.focus({ preventScroll: true }); }
    };
    window.fetch(form.action, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'X-Aepforms-Fragment': 'batch', Accept: 'text/html' },
      body: new URLSearchParams(data)
    }).then(function (res) {
      return res.text().then(function (html) {
        if (res.status === 200 || res.status === 409) {
          // Sent (all or some): what was sent is picked no more.
          slot.dataset.sent = 'true';
          ids.forEach(function (id) { delete picked[id]; });
          batchFormEmpty(form);
          batchSync();
        }
        done(html);
      });
    }, function () {
      delete form.dataset.sent;
      slot.textContent = 'Not sent: the server did not answer. Try again.';
    });
  });

  if (batchRegion()) {
    new MutationObserver(batchSoon).observe(byId('inbox') || body, { childList: true, subtree: true });
    // Opening the region draws a group a failed fetch left out.
    var batchDetails = batchRegion().querySelector('details');
    if (batchDetails) batchDetails.addEventListener('toggle', function () {
      if (batchDetails.open && batchWant) batchRefetch();
    });
    batchSync();
  }

  /* ---------- start ---------- */

  pruneDrafts();
  dropDrafts(doc);
  enhance(doc);
  renderConn();
  startList();
  refresh();
  if (ds.focus) {
    // The refused post's error summary takes focus; its card is brought
    // to the top of the window (not just scrolled until the summary shows
    // at the bottom), so the operator reads the card's heading with it.
    var summary = byId(ds.focus);
    if (summary) {
      var holder = summary.closest('.card') || summary;
      summary.focus({ preventScroll: true });
      holder.scrollIntoView({ block: 'start' });
      keepFocusOn(summary);
    }
  }
  if (doc.querySelector('time[data-deadline]') || ds.push) window.setInterval(tick, 1000);
  window.setInterval(ageTimes, Number(ds.relEvery) > 0 ? Number(ds.relEvery) : 30000);
  var tools = byId('tools');
  if (tools) tools.hidden = false;
  doc.addEventListener('change', function (e) {
    if (e.target.id === 'keys-on') save(KEYS, e.target.checked);
  });
  tick();
  connect();
})();

/* The undo bar. After a send, an answer's command waits a few
 * seconds (--undo-window) and its card offers Undo (a form the server
 * drew, posted by the browser itself: the page comes back with the card
 * open again, or says it was too late). This keeps a copy of every
 * card's Undo in the bar fixed at the bottom of the window, so it stays
 * in view wherever the card is, with one "Undo all" for several (a
 * batch), and counts the time left down. The server's push replaces a
 * card once its answer left, and its Undo leaves the bar with it. */
(function () {
  'use strict';
  var doc = document;
  var main = doc.getElementById('main');
  if (!main || !window.MutationObserver) return;
  var bar = doc.getElementById('undo-bar');
  if (!bar) {
    // The page had nothing to undo when drawn: the bar the server draws.
    bar = doc.createElement('section');
    bar.id = 'undo-bar';
    bar.className = 'undo-bar';
    bar.dataset.testid = 'undo-bar';
    bar.setAttribute('aria-label', 'Answers you can still undo');
    bar.setAttribute('aria-live', 'polite');
    bar.hidden = true;
    main.appendChild(bar);
  }
  var due = {}; // "{card} {command}" -> the time (ms) its command leaves
  var shown = ''; // the values the bar holds, to rebuild only on change
  var ticking = 0;

  function values(form) {
    return Array.prototype.map.call(form.querySelectorAll('input[name="undo"]'), function (i) { return i.value; });
  }

  function rebuild() {
    var forms = doc.querySelectorAll('#main [data-testid="card-undo"]');
    var now = Date.now();
    var all = [];
    forms.forEach(function (f) {
      values(f).forEach(function (v) {
        if (!(v in due)) due[v] = now + Number(f.dataset.undoLeftMs || 0);
        all.push(v);
      });
    });
    var key = all.join('|');
    if (key === shown) return;
    shown = key;
    // What the server refused to undo stays said until the next Undo.
    var refused = forms.length ? [] : Array.prototype.slice.call(bar.querySelectorAll('.undo__refused'));
    bar.textContent = '';
    refused.forEach(function (p) { bar.appendChild(p); });
    forms.forEach(function (f) {
      var c = f.cloneNode(true);
      c.dataset.testid = 'bar-undo';
      c.removeAttribute('id');
      var what = c.querySelector('[data-undo-what]');
      if (what) what.hidden = false;
      bar.appendChild(c);
    });
    if (forms.length > 1) bar.appendChild(undoAll(forms[0], all));
    bar.hidden = forms.length === 0 && refused.length === 0;
    if (doc.querySelector('form.undo') && !ticking) ticking = window.setInterval(tick, 250);
    tick();
  }

  /* undoAll is one form that takes back every held answer (a batch). */
  function undoAll(like, all) {
    var f = doc.createElement('form');
    f.method = 'post';
    f.action = like.action;
    f.className = 'undo undo--all';
    f.dataset.testid = 'bar-undo-all';
    all.forEach(function (v) {
      var i = doc.createElement('input');
      i.type = 'hidden';
      i.name = 'undo';
      i.value = v;
      f.appendChild(i);
    });
    var b = doc.createElement('button');
    b.type = 'submit';
    b.className = 'button button--secondary undo__button';
    b.dataset.testid = 'undo-all';
    b.textContent = (like.dataset.allLabel || 'Undo all %d').replace('%d', String(all.length));
    f.appendChild(b);
    return f;
  }

  /* words says s seconds as the server does: "4 s", "2 min 5 s". */
  function words(s) {
    if (s < 60) return s + ' s';
    var m = Math.floor(s / 60);
    return m + ' min' + (s % 60 ? ' ' + (s % 60) + ' s' : '');
  }

  /* tick writes each Undo's time left, in whole seconds. */
  function tick() {
    var now = Date.now();
    var any = false;
    doc.querySelectorAll('form.undo').forEach(function (f) {
      var vs = values(f);
      vs.forEach(function (v) { if (!(v in due)) due[v] = now + Number(f.dataset.undoLeftMs || 0); });
      var left = 0;
      vs.forEach(function (v) { if (due[v] !== undefined) left = Math.max(left, due[v] - now); });
      var span = f.querySelector('[data-undo-left]');
      if (span) span.textContent = words(Math.max(0, Math.ceil(left / 1000)));
      if (left > 0) any = true;
    });
    if (!any && ticking) {
      window.clearInterval(ticking);
      ticking = 0;
    }
  }

  /* An Undo is posted with fetch (the page stays where it is; the push
   * brings the card back open), before the answer script sees it. What
   * the server refuses (too late) is said in the bar; without fetch, or
   * with no answer from the server, the browser posts it itself. */
  doc.addEventListener('submit', function (e) {
    var f = e.target;
    if (!f.classList || !f.classList.contains('undo') || !window.fetch || !window.URLSearchParams) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    if (f.dataset.sent === 'true') return;
    f.dataset.sent = 'true';
    var native = function () { HTMLFormElement.prototype.submit.call(f); };
    window.fetch(f.action, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'X-Aepforms-Fragment': 'card' },
      body: new URLSearchParams(new FormData(f))
    }).then(function (res) {
      if (res.status === 204) {
        values(f).forEach(function (v) { delete due[v]; });
        bar.querySelectorAll('form.undo').forEach(function (g) {
          if (values(g).some(function (v) { return values(f).indexOf(v) >= 0; })) g.remove();
        });
        if (!bar.querySelector('form.undo')) bar.hidden = true;
        return;
      }
      return res.text().then(function (text) {
        var p = doc.createElement('p');
        p.className = 'undo__refused';
        p.dataset.testid = 'undo-refused';
        p.setAttribute('role', 'alert');
        p.textContent = text;
        f.replaceWith(p);
        bar.hidden = false;
      });
    }, native);
  }, true);

  new MutationObserver(function (records) {
    for (var i = 0; i < records.length; i++) {
      if (!bar.contains(records[i].target)) { rebuild(); return; }
    }
  }).observe(main, { childList: true, subtree: true });
  rebuild();
})();
