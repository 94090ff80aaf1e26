// aepforms service worker: shows the server's Web Push notifications and
// opens the card when one is clicked. It decides nothing: the payload
// (title, body, tag = card id, url) is the server's, written in
// internal/webpush. Served at {base}sw.js, so its scope is the UI.
'use strict';

// notify shows one pushed message. A replacement (a card that settled)
// reuses the tag, so it takes the place of the question's notification.
function notify(msg) {
  var scope = self.registration.scope;
  return self.registration.showNotification(String(msg.title || 'aepforms'), {
    body: String(msg.body || ''),
    tag: String(msg.tag || 'aepforms'),
    renotify: !!msg.renotify,
    icon: scope + 'static/icon.svg',
    data: { url: new URL(String(msg.url || ''), scope).href, closed: !!msg.closed },
    timestamp: Date.now()
  });
}

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
  event.waitUntil(open(url));
});

self.addEventListener('install', function () {
  self.skipWaiting();
});

self.addEventListener('activate', function (event) {
  event.waitUntil(self.clients.claim());
});
