// aepforms service worker: shows the server's Web Push notifications and
// opens the card when one is clicked. It decides nothing: the payload
// (title, body, tag = card id, url) is the server's, written in
// internal/webpush. Served at {base}sw.js, so its scope is the UI.
'use strict';

// notify shows one pushed message. A replacement (a card that settled)
// reuses the tag, so it takes the place of the question's notification.
function notify(msg) {
  var scope = self.registration.scope;
  var opts = {
    body: String(msg.body || ''),
    tag: String(msg.tag || 'aepforms'),
    renotify: !!msg.renotify,
    icon: scope + 'static/icon.svg',
    data: { url: new URL(String(msg.url || ''), scope).href, closed: !!msg.closed, title: String(msg.title || 'aepforms') },
    timestamp: Date.now()
  };
  // Answering from the notification (a device that allowed it): the
  // option's own words as the actions, and where to post the answer.
  if (Array.isArray(msg.actions) && msg.answer && !msg.closed) {
    opts.actions = msg.actions.slice(0, 2).map(function (a) {
      return { action: String(a.action), title: String(a.title) };
    });
    opts.data.actions = msg.actions;
    opts.data.answer = msg.answer;
  }
  return self.registration.showNotification(opts.data.title, opts);
}

// answer posts the option chosen in a notification through the page's
// own answer path (one token, one command), then replaces the
// notification with what was sent, or says it was not.
function answer(n, action) {
  var d = n.data || {};
  var a = (d.actions || []).filter(function (x) { return x.action === action; })[0];
  if (!a || !d.answer) return open(d.url || self.registration.scope);
  var body = new URLSearchParams();
  body.set('token', d.answer.token);
  body.set('option', action.replace(/^o/, ''));
  var url = new URL(d.answer.url, self.registration.scope).href;
  return fetch(url, { method: 'POST', body: body, credentials: 'same-origin' }).then(function (r) {
    return r.ok ? a.sent : d.answer.failed;
  }, function () {
    return d.answer.failed;
  }).then(function (text) {
    return notify({ tag: n.tag, title: d.title, body: text, url: d.url, closed: true });
  });
}
self.aepformsAnswer = answer;

self.addEventListener('push', function (event) {
  var msg = {};
  try {
    msg = event.data ? event.data.json() : {};
  } catch (e) {
    msg = {};
  }
  // Never a silent push: browsers penalise them, and the operator must
  // see what became of a question.
  event.waitUntil(notify(msg));
});

// open focuses a tab of the UI (navigated to the card) or opens one.
function open(url) {
  var scope = self.registration.scope;
  return self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (tabs) {
    for (var i = 0; i < tabs.length; i++) {
      var t = tabs[i];
      if (t.url.indexOf(scope) === 0 && 'focus' in t) {
        return t.focus().then(function (c) {
          return c && 'navigate' in c ? c.navigate(url) : c;
        });
      }
    }
    return self.clients.openWindow(url);
  });
}

self.addEventListener('notificationclick', function (event) {
  var n = event.notification;
  var url = (n.data && n.data.url) || self.registration.scope;
  n.close();
  if (event.action) {
    event.waitUntil(answer(n, event.action));
    return;
  }
  event.waitUntil(open(url));
});

self.addEventListener('install', function () {
  self.skipWaiting();
});

self.addEventListener('activate', function (event) {
  event.waitUntil(self.clients.claim());
});
