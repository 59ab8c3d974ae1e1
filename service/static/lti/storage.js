// The LTI launch's state kept in the LMS's own frame, for browsers that keep no cookie of this
// site in the LMS's frame (Safari's default). It follows the 1EdTech guides "LTI Client Side
// postMessages", "LTI postMessage Storage" and "OIDC Login with LTI Client Side postMessages":
//
// - at login, the page asks the LMS which frame stores data (lti.capabilities, to the window
//   around this frame), stores the state and nonce there (lti.put_data), then goes on to the
//   LMS's authorization endpoint;
// - at the launch, when the state cookie did not come back, the page reads them back
//   (lti.get_data) and posts them with the launch, where the server compares them.
//
// Messages to the storage frame go to the LMS's authorization endpoint's origin only, and only
// its answers are taken. The page's settings are the JSON block #gradquiz-lti-storage, written
// by the server (this file is static: the page allows no inline script).
(function () {
  "use strict";

  var TIMEOUT_MS = 2000;
  var config = JSON.parse(document.getElementById("gradquiz-lti-storage").textContent);
  var status = document.getElementById("lti-storage-status");

  function say(text) {
    status.textContent = text;
  }

  function messageId() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b + 0x100).toString(16).slice(1); }).join("");
  }

  // The LMS's window: the one around this frame (or the opener of a window it opened).
  function lmsWindow() {
    if (window.parent && window.parent !== window) return window.parent;
    return window.opener || null;
  }

  // One request and its answer: the answer must carry our message_id and the subject's
  // ".response", and come from `origin` ("*": from anyone, for lti.capabilities, which holds
  // nothing secret and may be answered by the LMS's main window on another host).
  function send(target, origin, message) {
    return new Promise(function (resolve, reject) {
      var id = messageId();
      var timer = window.setTimeout(function () { done(); reject(new Error("no answer to " + message.subject)); },
                                    TIMEOUT_MS);
      function done() {
        window.clearTimeout(timer);
        window.removeEventListener("message", onMessage);
      }
      function onMessage(event) {
        var data = event.data;
        if (!data || typeof data !== "object" || data.message_id !== id) return;
        if (data.subject !== message.subject + ".response") return;
        if (origin !== "*" && event.origin !== origin) return;
        done();
        if (data.error) reject(new Error(message.subject + ": " + (data.error.code || "error")));
        else resolve(data);
      }
      window.addEventListener("message", onMessage);
      var sent = Object.assign({}, message, { message_id: id });
      target.postMessage(sent, origin);
    });
  }

  function frameNamed(lms, name) {
    if (!name || name === "_parent") return lms;
    try {
      return lms.frames[name] || null;
    } catch (error) {
      return null;
    }
  }

  // Where and under which subjects to put and get data: what lti.capabilities answers, else the
  // login's lti_storage_target with the guides' subjects.
  function findStorage() {
    var lms = lmsWindow();
    if (!lms) return Promise.reject(new Error("no LMS window around this page"));
    var fallback = { frame: frameNamed(lms, config.target), put: "lti.put_data", get: "lti.get_data" };
    return send(lms, "*", { subject: "lti.capabilities" }).then(function (answer) {
      var supported = Array.isArray(answer.supported_messages) ? answer.supported_messages : [];
      var put = supported.filter(function (m) { return /(^|\.)lti\.put_data$/.test(m && m.subject); })[0];
      var get = supported.filter(function (m) { return /(^|\.)lti\.get_data$/.test(m && m.subject); })[0];
      if (!put || !get) throw new Error("the LMS offers no storage");
      return { frame: frameNamed(lms, put.frame || config.target), put: put.subject, get: get.subject };
    }, function () {
      return fallback;
    }).then(function (storage) {
      if (!storage.frame) throw new Error("no storage frame named " + config.target);
      return storage;
    });
  }

  function putData(storage, key, value) {
    return send(storage.frame, config.platform_origin, { subject: storage.put, key: key, value: value });
  }

  function getData(storage, key) {
    return send(storage.frame, config.platform_origin, { subject: storage.get, key: key }).then(function (answer) {
      return typeof answer.value === "string" ? answer.value : "";
    });
  }

  // Login: store the state and nonce, then on to the LMS. Should the storage fail, the state
  // cookie may still do; the launch says so if neither does.
  function login() {
    findStorage().then(function (storage) {
      return putData(storage, config.state_key, config.state).then(function () {
        return putData(storage, config.nonce_key, config.nonce);
      });
    }).catch(function () {
      return null;
    }).then(function () {
      window.location.replace(config.redirect);
    });
  }

  // Launch: read them back, post them with the launch; the server compares them with the state.
  function launch() {
    var form = document.getElementById("lti-storage-launch");
    findStorage().then(function (storage) {
      return getData(storage, config.state_key).then(function (state) {
        return getData(storage, config.nonce_key).then(function (nonce) {
          form.elements[config.state_field].value = state;
          form.elements[config.nonce_field].value = nonce;
          // Used once: free the LMS's storage (a put without a value removes the key).
          [config.state_key, config.nonce_key].forEach(function (key) {
            storage.frame.postMessage({ subject: storage.put, key: key, message_id: messageId() },
                                      config.platform_origin);
          });
        });
      });
    }).catch(function () {
      say("The LMS did not give back this launch's state. Opening the exercise anyway…");
    }).then(function () {
      form.submit();
    });
  }

  if (config.step === "login") login();
  else if (config.step === "launch") launch();
})();
