#!/usr/bin/env python3
"""Walks the care-team console in real headless Chromium, as a nurse would, over Chromium's
DevTools protocol on a pipe (--remote-debugging-pipe; Python's standard library only).

Usage: console-walk.py BASE_URL LOGIN PASSWORD SHOTS_DIR DATE

Shows the sign-in page, signs in, reads the patient list, opens the first patient, acknowledges an alert, silences it,
records an injury on DATE, sends a span that ends before it starts (refused), signs out, then opens the
patient's page signed out and signs in again (it leads back there); screenshots the list, the patient page
and the refusal at desktop and phone width into SHOTS_DIR. Prints one JSON object with what it saw; exits 1 on a failure.
"""
import base64
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="mw-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def wire():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            ["chromium-headless-shell", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile, "--no-first-run", "about:blank"],
            pass_fds=(3, 4), preexec_fn=wire, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)

    def send(self, method, params, session):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        return self.next_id

    def read(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise EOFError("Chromium closed the pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=False, timeout=30):
        wanted = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            m = self.read(deadline)
            if m.get("id") == wanted:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_load(self, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == "Page.loadEventFired":
                    del self.events[: i + 1]
                    return
            self.events.append(self.read(deadline))

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def go(self, url):
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_load()

    def submit(self, form_selector, values):
        """Fills a form's fields (by name) and presses its submit button, as a person would."""
        self.events.clear()
        fill = "".join(
            f"f.querySelector('[name={json.dumps(k)}]').value = {json.dumps(v)};" for k, v in values.items())
        self.evaluate(f"(() => {{ const f = document.querySelector({json.dumps(form_selector)}); {fill} "
                      f"f.querySelector('button[type=submit]').click(); }})()")
        self.wait_load()

    def screenshot(self, path, width, mobile):
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": mobile}, session=True)
        height = self.evaluate("document.documentElement.scrollHeight")
        shot = self.call("Page.captureScreenshot",
                         {"format": "png", "captureBeyondViewport": True,
                          "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 4000), "scale": 1}}, session=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        self.call("Emulation.clearDeviceMetricsOverride", session=True)

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        subprocess.run(["rm", "-rf", self.profile])


def main():
    base, login, password, shots, date = sys.argv[1:6]
    seen = {}
    b = Browser()
    try:
        b.go(base + "/console")
        seen["firstUrl"] = b.evaluate("location.pathname")
        b.screenshot(os.path.join(shots, "console-sign-in-phone.png"), 390, True)
        b.submit("form.signin", {"login": login, "password": password})
        seen["afterSignIn"] = b.evaluate("location.pathname")
        seen["cookies"] = b.call("Storage.getCookies", {}).get("cookies", [])
        seen["scriptCookie"] = b.evaluate("document.cookie")
        seen["rows"] = b.evaluate("[...document.querySelectorAll('table.patients td:first-child a')].map(a => a.textContent)")
        seen["stale"] = b.evaluate("[...document.querySelectorAll('td.stale')].map(td => td.textContent)")
        b.screenshot(os.path.join(shots, "console-list.png"), 1000, False)
        b.screenshot(os.path.join(shots, "console-list-phone.png"), 390, True)

        b.evaluate("document.querySelector('table.patients td:first-child a').click()")
        b.wait_load()
        seen["patientUrl"] = b.evaluate("location.pathname")
        b.screenshot(os.path.join(shots, "console-patient.png"), 1000, False)
        b.screenshot(os.path.join(shots, "console-patient-phone.png"), 390, True)

        b.submit("form.action[action$='/ack']", {"note": "called the patient, physio booked"})
        seen["afterAck"] = b.evaluate("document.querySelector('p.notice')?.textContent")
        b.submit("form.action[action$='/silence']", {"hours": "24", "comment": "physio review on Monday"})
        seen["afterSilence"] = b.evaluate("document.querySelector('p.notice')?.textContent")
        b.submit("form.action:has(select[name=kind])", {"kind": "injury", "first": date, "note": "fell in the garden"})
        seen["afterInjury"] = b.evaluate("document.querySelector('p.notice')?.textContent")
        seen["refusal"] = b.evaluate("document.querySelector('p.refused')?.textContent")
        b.screenshot(os.path.join(shots, "console-patient-after.png"), 1000, False)
        # A span that ends before it starts: refused, in the words of the form's labels.
        before = (datetime.date.fromisoformat(date) - datetime.timedelta(days=1)).isoformat()
        b.submit("form.action:has(select[name=kind])", {"kind": "illness", "first": date, "last": before})
        seen["spanRefusal"] = b.evaluate("document.querySelector('p.refused')?.textContent")
        b.screenshot(os.path.join(shots, "console-refusal.png"), 1000, False)

        b.evaluate("document.querySelector('header.top form button').click()")
        b.wait_load()
        seen["afterSignOut"] = b.evaluate("location.pathname")
        seen["cookiesAfterSignOut"] = b.call("Storage.getCookies", {}).get("cookies", [])
        b.go(base + "/console")
        seen["afterSignOutConsole"] = b.evaluate("location.pathname")
        # A patient's page asked for while signed out: signing in leads there.
        b.go(base + seen["patientUrl"])
        seen["askedSignedOut"] = b.evaluate("location.pathname + location.search")
        b.submit("form.signin", {"login": login, "password": password})
        seen["afterReturn"] = b.evaluate("location.pathname")
    except Exception as e:  # report what was seen up to the failure
        seen["error"] = f"{type(e).__name__}: {e}"
    finally:
        b.close()
    print(json.dumps(seen))
    return 1 if "error" in seen else 0


if __name__ == "__main__":
    sys.exit(main())
