/* aepforms: signing in the panel inside another site's frame, through a
 * window of its own (the server's side and why: web/handoff.go).
 *
 * The waits are the server's flags: data-poll-ms on the frame (how often
 * it checks whether the window closed), data-wait-ms on the window (how
 * long it waits for its ticket).
 *
 * In the frame ([data-testid="signin-window"]): the button opens the
 * window (at once, on the click, so the browser lets it open), starts a
 * hand-off (POST data-handoff: a partitioned cookie, and a ticket) and
 * gives the window its ticket when the window asks, by postMessage to this
 * origin only. When the window says it signed in, or is closed, the frame
 * redeems the hand-off (POST data-redeem) and goes on signed in.
 *
 * In the window ([data-testid="signin-popup-window"]): it asks the window
 * that opened it for the ticket, takes it only from that window and only
 * from this origin, and posts it on to the provider. Opened any other
 * way, it says so and does nothing.
 *
 * Once signed in ([data-testid="signin-popup-done"]): the window tells
 * the frame and closes.
 */
(function () {
  'use strict';
  var origin = window.location.origin;
  var READY = 'aepforms:signin-ready';
  var TICKET = 'aepforms:signin-ticket';
  var DONE = 'aepforms:signin-done';

  // show puts root in state: the lines for it are shown, the others hidden.
  function show(root, state) {
    root.dataset.state = state;
    Array.prototype.forEach.call(root.querySelectorAll('[data-when]'), function (line) {
      line.hidden = line.dataset.when !== state;
    });
  }

  function post(url) {
    return fetch(url, { method: 'POST', credentials: 'same-origin', headers: { Accept: 'application/json' } })
      .then(function (r) {
        return r.json().then(function (body) { return body; }, function () { return { state: 'failed' }; });
      });
  }

  /* ---------- the frame ---------- */
  function frame(root) {
    var popup = null;
    var ticket = null;
    var watch = 0;
    var redeeming = false;
    var button = root.querySelector('[data-testid="signin-popup"]');
    var label = button.textContent;
    root.hidden = false;

    // state shows the frame's state; while the window is open, the button
    // brings it to the front.
    function state(s) {
      show(root, s);
      button.textContent = s === 'open' ? button.dataset.openLabel : label;
    }

    function stopWatching() {
      if (watch) window.clearInterval(watch);
      watch = 0;
    }

    // redeem picks the window's sign-in up; closed: the window is gone, so
    // a sign-in still pending is one that did not happen (or one this
    // frame cannot see: it may continue by hand).
    function redeem(closed) {
      if (redeeming) return;
      redeeming = true;
      post(root.dataset.redeem).then(function (ans) {
        redeeming = false;
        if (ans.state === 'signed-in') {
          stopWatching();
          state('done');
          window.location.assign(ans.next);
        } else if (ans.state === 'pending') {
          if (closed) state('closed');
        } else if (ans.state === 'expired') {
          stopWatching();
          state('expired');
        } else if (ans.state === 'none') {
          stopWatching();
          state('not-kept');
        } else {
          state('failed');
        }
      }, function () {
        redeeming = false;
        state('failed');
      });
    }

    function sendTicket() {
      if (popup && ticket && !popup.closed) popup.postMessage({ type: TICKET, ticket: ticket }, origin);
    }

    window.addEventListener('message', function (e) {
      if (e.origin !== origin || !e.data || !popup) return;
      if (e.data.type === READY && e.source === popup) sendTicket();
      if (e.data.type === DONE) redeem(false);
    });

    button.addEventListener('click', function () {
      if (popup && !popup.closed && root.dataset.state === 'open') {
        popup.focus();
        return;
      }
      stopWatching();
      ticket = null;
      popup = window.open(root.dataset.popup, 'aepforms-signin', 'popup,width=520,height=720');
      if (!popup) {
        state('blocked');
        return;
      }
      state('open');
      post(root.dataset.handoff).then(function (ans) {
        if (ans.state !== 'started') {
          state('failed');
          return;
        }
        ticket = ans.ticket;
        sendTicket();
      }, function () { state('failed'); });
      watch = window.setInterval(function () {
        if (popup.closed) {
          stopWatching();
          redeem(true);
        }
      }, Number(root.dataset.pollMs) > 0 ? Number(root.dataset.pollMs) : 400);
    });
    root.querySelector('[data-testid="signin-popup-continue"]').addEventListener('click', function () {
      redeem(true);
    });
  }

  /* ---------- the window ---------- */
  function opened(root) {
    var form = root.querySelector('form');
    var opener = window.opener;
    if (!opener) {
      show(root, 'orphan');
      return;
    }
    var sent = false;
    show(root, 'waiting');
    window.addEventListener('message', function (e) {
      if (e.origin !== origin || e.source !== opener || !e.data || e.data.type !== TICKET || sent) return;
      sent = true;
      form.elements.handoff.value = String(e.data.ticket);
      form.submit();
    });
    // A window that opener does not answer was not opened by a panel.
    window.setTimeout(function () {
      if (!sent) show(root, 'orphan');
    }, Number(root.dataset.waitMs) > 0 ? Number(root.dataset.waitMs) : 15000);
    try {
      opener.postMessage({ type: READY }, origin);
    } catch (err) {
      show(root, 'orphan');
    }
  }

  function done() {
    if (window.opener) {
      try {
        window.opener.postMessage({ type: DONE }, origin);
      } catch (err) { /* the frame redeems when it sees the window close */ }
    }
    window.close();
  }

  var root = document.querySelector('[data-testid="signin-window"]');
  if (root) frame(root);
  root = document.querySelector('[data-testid="signin-popup-window"]');
  if (root) opened(root);
  if (document.querySelector('[data-testid="signin-popup-done"]')) done();
})();
