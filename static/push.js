// aepforms Web Push on the page: registers the service worker, offers
// one control, "Notify me on this device" / "Stop notifying this device"
// (none when the server has push off), and reports
// whether this page is in view so the server pushes only to an operator
// who is not looking. Every word comes from the server
// (GET {base}subscriptions, from internal/render/view/words.go).
(function () {
  'use strict';
  var body = document.body;
  // Only a signed-in page of questions (the sign-in page has no push URL).
  if (!body || !body.getAttribute('data-push')) return;
  var base = (body.getAttribute('data-base') || '') + '/';
  // How long the browser's push service may take to subscribe: the
  // server's --push-subscribe-timeout, given on the body.
  var SUBSCRIBE_TIMEOUT = parseInt(body.getAttribute('data-push-subscribe-timeout'), 10) || 15000;
  // A visible page says so again this often (the server forgets a report
  // after two minutes: a page that closed silently stops counting).
  var VISIBLE_EVERY = 60000;

  function post(path, method, data, keepalive) {
    return fetch(base + path, {
      method: method,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(data),
      credentials: 'same-origin',
      keepalive: !!keepalive
    });
  }

  // Visibility reports.
  var pageId = (self.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Math.random()).slice(2) + '-' + Date.now();
  var timer = null;
  function report(keepalive) {
    var visible = document.visibilityState === 'visible';
    post('visibility', 'POST', { page: pageId, visible: visible }, keepalive).catch(function () {});
    clearInterval(timer);
    timer = visible ? setInterval(function () { report(false); }, VISIBLE_EVERY) : null;
  }
  document.addEventListener('visibilitychange', function () { report(false); });
  window.addEventListener('pagehide', function () {
    post('visibility', 'POST', { page: pageId, visible: false }, true).catch(function () {});
  });
  report(false);

  // The tab icon shows how many questions wait (the count app.js puts
  // in the title, "(N) aepforms"), drawn over the UI's own icon; and an
  // opt-in sound plays when the count goes up.
  var icon = document.querySelector('link[rel="icon"]');
  var plainIcon = icon ? icon.href : '';
  var iconImage = null;
  var lastPending = -1;
  var audio = null;
  function pendingCount() {
    var m = /\((\d+)\)/.exec(document.title);
    return m ? parseInt(m[1], 10) : 0;
  }
  function drawBadge(n) {
    if (!icon || !plainIcon) return;
    if (n <= 0) { icon.href = plainIcon; return; }
    var c = document.createElement('canvas');
    c.width = c.height = 64;
    var g = c.getContext('2d');
    if (!g) return;
    if (iconImage && iconImage.complete) g.drawImage(iconImage, 0, 0, 64, 64);
    g.fillStyle = '#c62828';
    g.beginPath();
    g.arc(44, 20, 20, 0, 2 * Math.PI);
    g.fill();
    g.fillStyle = '#ffffff';
    g.font = 'bold 26px sans-serif';
    g.textAlign = 'center';
    g.textBaseline = 'middle';
    g.fillText(n > 9 ? '9+' : String(n), 44, 21);
    icon.type = 'image/png';
    icon.href = c.toDataURL('image/png');
  }
  function beep() {
    if (!audio) return;
    var o = audio.createOscillator(), v = audio.createGain();
    o.frequency.value = 880;
    v.gain.setValueAtTime(0.15, audio.currentTime);
    v.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.3);
    o.connect(v);
    v.connect(audio.destination);
    o.start();
    o.stop(audio.currentTime + 0.3);
  }
  function onTitle() {
    var n = pendingCount();
    if (n === lastPending) return;
    if (n > lastPending && lastPending >= 0) beep();
    lastPending = n;
    drawBadge(n);
  }
  if (icon && plainIcon) {
    iconImage = new Image();
    iconImage.onload = function () { lastPending = -2; onTitle(); };
    iconImage.src = plainIcon;
  }
  var titleEl = document.querySelector('title');
  if (titleEl && 'MutationObserver' in window) {
    new MutationObserver(onTitle).observe(titleEl, { childList: true, characterData: true, subtree: true });
  }
  onTitle();

  // No service worker off a secure page (HTTPS or localhost): the
  // controls then say why.
  var registration = ('serviceWorker' in navigator) ? navigator.serviceWorker.register(base + 'sw.js', { scope: base }) : null;
  if (registration) registration.catch(function () {});

  // The controls, on the inbox page only (not the embedded panel).
  if (!body.classList.contains('page')) return;
  var anchor = document.getElementById('push-anchor');
  if (!anchor || !anchor.parentNode) return;

  function keyBytes(b64) {
    var s = b64.replace(/-/g, '+').replace(/_/g, '/');
    while (s.length % 4) s += '=';
    var raw = atob(s), out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }

  function withTimeout(p, ms) {
    return new Promise(function (resolve, reject) {
      var t = setTimeout(function () { reject(new Error('timeout')); }, ms);
      p.then(function (v) { clearTimeout(t); resolve(v); }, function (e) { clearTimeout(t); reject(e); });
    });
  }

  fetch(base + 'subscriptions', { credentials: 'same-origin' }).then(function (r) {
    return r.ok ? r.json() : null;
  }).then(function (cfg) {
    if (!cfg) return;
    var w = cfg.words || {};
    var box = document.createElement('span');
    box.className = 'push-controls';
    box.setAttribute('data-testid', 'push-controls');
    var button = document.createElement('button');
    button.type = 'button';
    button.className = 'link-button';
    button.setAttribute('data-testid', 'push-toggle');
    var status = document.createElement('span');
    status.className = 'push-status';
    status.setAttribute('role', 'status');
    status.setAttribute('data-testid', 'push-status');
    // "Allow answering from notifications", for this device.
    var allowLabel = document.createElement('label');
    allowLabel.className = 'push-actions';
    var allow = document.createElement('input');
    allow.type = 'checkbox';
    allow.setAttribute('data-testid', 'push-actions');
    allow.checked = localStorage.getItem('aepforms:push-actions') === '1';
    allowLabel.appendChild(allow);
    allowLabel.appendChild(document.createTextNode(' ' + (w['allow-actions'] || '')));
    // "Play a sound for new questions" (this browser; Web Audio, started
    // by the click that turns it on, as browsers require).
    var soundLabel = document.createElement('label');
    soundLabel.className = 'push-actions';
    var sound = document.createElement('input');
    sound.type = 'checkbox';
    sound.setAttribute('data-testid', 'push-sound');
    soundLabel.appendChild(sound);
    // The words in full; on a phone's compact header "Sound" (the full
    // words stay the control's name).
    var soundLong = document.createElement('span');
    soundLong.className = 'push-actions__long';
    soundLong.textContent = ' ' + (w.sound || '');
    var soundShort = document.createElement('span');
    soundShort.className = 'push-actions__short';
    soundShort.setAttribute('aria-hidden', 'true');
    soundShort.textContent = ' Sound';
    soundLabel.appendChild(soundLong);
    soundLabel.appendChild(soundShort);
    sound.setAttribute('aria-label', w.sound || '');
    sound.addEventListener('change', function () {
      localStorage.setItem('aepforms:sound', sound.checked ? '1' : '0');
      if (sound.checked && !audio && (window.AudioContext || window.webkitAudioContext)) {
        audio = new (window.AudioContext || window.webkitAudioContext)();
      } else if (!sound.checked && audio) {
        audio.close();
        audio = null;
      }
    });
    if (localStorage.getItem('aepforms:sound') === '1') {
      // Kept from before: the sound starts with the next click or key.
      sound.checked = true;
      var unlock = function () {
        document.removeEventListener('pointerdown', unlock);
        document.removeEventListener('keydown', unlock);
        if (sound.checked && !audio && (window.AudioContext || window.webkitAudioContext)) {
          audio = new (window.AudioContext || window.webkitAudioContext)();
        }
      };
      document.addEventListener('pointerdown', unlock);
      document.addEventListener('keydown', unlock);
    }
    box.appendChild(button);
    box.appendChild(allowLabel);
    box.appendChild(soundLabel);
    box.appendChild(status);
    anchor.parentNode.insertBefore(box, anchor.nextSibling);

    // The operator's devices, each with its last failure, so a broken
    // push channel cannot go unnoticed.
    function fill(template, args) {
      var i = 0;
      return String(template || '').replace(/%s/g, function () { return String(args[i++]); });
    }
    function listDevices(thisId) {
      var devices = cfg.devices || [];
      if (!devices.length) return;
      var list = document.createElement('ul');
      list.className = 'push-devices';
      list.setAttribute('aria-label', w.devices || '');
      list.setAttribute('data-testid', 'push-devices');
      devices.forEach(function (d) {
        var li = document.createElement('li');
        var who = d.id === thisId ? w['device-this'] : w['device-other'];
        var since = String(d.created || '').slice(0, 10);
        li.textContent = d.last_failure ?
          fill(w['device-fail'], [who, since, String(d.last_failure_at || '').slice(0, 16).replace('T', ' '), d.last_failure]) :
          fill(w['device-line'], [who, since]);
        list.appendChild(li);
      });
      box.appendChild(list);
    }

    function say(text) { status.textContent = text || ''; }
    // Push off here: no control that cannot work (no button, nothing
    // about answering from a notification); the sound for this tab stays.
    // Off on the server (the default) is not the operator's to fix: the
    // page says nothing of it (the README and the log do). Off in this
    // browser: one muted line says why, in the operator's words.
    function off(text) {
      button.hidden = true;
      allowLabel.hidden = true;
      status.classList.add('push-status--off');
      say(text);
    }
    if (!cfg.enabled) {
      off('');
      box.dataset.push = 'off';
      return;
    }
    box.dataset.push = 'on';
    if (!window.isSecureContext) {
      off(w['off-insecure']);
      return;
    }
    if (!registration || !('PushManager' in window) || !('Notification' in window)) {
      off(w['off-unsupported']);
      return;
    }

    var current = null;
    function save(sub) {
      var body = sub.toJSON();
      // A role that answers nothing (a viewer) is told of new questions,
      // without buttons: the server keeps no answering for it.
      body.actions = cfg.answer === true && allow.checked;
      return post('subscriptions', 'POST', body);
    }
    allow.addEventListener('change', function () {
      localStorage.setItem('aepforms:push-actions', allow.checked ? '1' : '0');
      if (current) save(current).catch(function () {});
    });
    function show(sub) {
      current = sub;
      allowLabel.hidden = !sub || cfg.answer !== true;
      button.textContent = sub ? w.unsubscribe : w.subscribe;
      button.setAttribute('aria-pressed', sub ? 'true' : 'false');
    }
    // deviceId is the server's id of a device: the first 8 bytes of the
    // SHA-256 of its endpoint, in hex.
    function deviceId(endpoint) {
      return crypto.subtle.digest('SHA-256', new TextEncoder().encode(endpoint)).then(function (h) {
        return Array.prototype.map.call(new Uint8Array(h).slice(0, 8), function (b) {
          return ('0' + b.toString(16)).slice(-2);
        }).join('');
      });
    }
    registration.then(function (reg) { return reg.pushManager.getSubscription(); })
      .then(function (sub) {
        if (!sub) {
          listDevices('');
          return show(null);
        }
        return deviceId(sub.endpoint).then(function (id) {
          listDevices(id);
          var mine = (cfg.devices || []).filter(function (d) { return d.id === id; })[0];
          if (!mine) {
            // The server no longer notifies this device (signed out,
            // or its push service said it was gone): nor does the browser.
            show(null);
            return sub.unsubscribe();
          }
          show(sub);
          // This device's last failed push, so a broken channel shows.
          if (mine.last_failure) say(mine.last_failure);
        });
      })
      .catch(function () { show(null); });

    function subscribe() {
      return Notification.requestPermission().then(function (perm) {
        if (perm !== 'granted') throw new Error('denied');
        return navigator.serviceWorker.ready;
      }).then(function (reg) {
        return withTimeout(reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(cfg.key) }), SUBSCRIBE_TIMEOUT);
      }).then(function (sub) {
        return save(sub).then(function (r) {
          if (!r.ok) {
            sub.unsubscribe();
            throw new Error(r.status === 422 ? 'refused' : 'failed');
          }
          show(sub);
          say(w.subscribed);
        });
      });
    }

    function unsubscribe() {
      var sub = current;
      return post('subscriptions', 'DELETE', { endpoint: sub.endpoint }).then(function () {
        return sub.unsubscribe();
      }).then(function () {
        show(null);
        say(w.unsubscribed);
      });
    }

    button.addEventListener('click', function () {
      button.disabled = true;
      button.setAttribute('aria-busy', 'true');
      // Progress: the browser's push service may take a while.
      say(current ? '' : w.subscribing);
      (current ? unsubscribe() : subscribe()).catch(function (e) {
        var m = e && e.message;
        say(m === 'denied' ? w.denied : m === 'timeout' ? w.timeout : m === 'refused' ? w['subscribe-refused'] : w.failed);
      }).then(function () { button.disabled = false; button.removeAttribute('aria-busy'); });
    });
  }).catch(function () {});
})();
