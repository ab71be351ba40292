#!/usr/bin/env python3
"""web-browser.py -- drive moat's web console in headless chromium.

Run by tests/integration/90-web-console.sh inside the LAN namespace (the
management network); guests are driven with `ip netns exec`, so every
packet stays in the test's namespaces.  Prints one line per check:
"PASS description" or "FAIL description: detail", and "INFO ..." lines.

  web-browser.py --base https://ADDR:PORT --owner-link URL --member-link URL
      --reused-link URL --guest-ns NS --art DIR --gw 10.77.0.1
      --hold ADDR:PORT (a server the guest may hold connections to)
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ap = argparse.ArgumentParser()
for a in ("base", "owner-link", "member-link", "reused-link", "guest-ns",
          "art", "gw", "lan-host", "owner", "member", "sandbox", "member-sandbox",
          "hold"):
    ap.add_argument("--" + a, required=True)
A = ap.parse_args()


def check(ok, what, detail=""):
    print(("PASS " if ok else "FAIL ") + what + ("" if ok else ": " + str(detail)),
          flush=True)
    return ok


def dig(name):
    out = subprocess.run(["ip", "netns", "exec", A.guest_ns, "dig", "+time=2",
                          "+tries=1", "@" + A.gw, name, "A"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "status:" in line:
            return line.split("status:")[1].split(",")[0].strip()
    return "none"


def fetch(name):
    """Resolve at the gateway as the guest would, then fetch."""
    addr = subprocess.run(["ip", "netns", "exec", A.guest_ns, "dig", "+short",
                           "+time=2", "+tries=1", "@" + A.gw, name, "A"],
                          capture_output=True, text=True).stdout.split()
    if not addr:
        return ""
    r = subprocess.run(["ip", "netns", "exec", A.guest_ns, "curl", "-s",
                        "--max-time", "5", "--resolve",
                        "%s:80:%s" % (name, addr[-1]), "http://%s/" % name],
                       capture_output=True, text=True)
    return r.stdout.strip()


def wait(fn, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.05)
    return None


def row_for(name):
    for r in drv.find_elements(By.CSS_SELECTOR, "#refused-groups tr"):
        if r.get_attribute("data-name") == name:
            return r
    return None


def shot(name):
    drv.execute_script("window.scrollTo(0, 0)")
    drv.save_screenshot("%s/%s.png" % (A.art, name))


opts = webdriver.ChromeOptions()
for o in ("--headless=new", "--no-sandbox", "--disable-gpu",
          "--ignore-certificate-errors", "--window-size=390,844",
          "--disable-dev-shm-usage", "--no-first-run"):
    opts.add_argument(o)
# A phone: 390 CSS pixels wide (headless chromium's window cannot be
# narrower than 500, the emulated viewport can).
opts.add_experimental_option("mobileEmulation", {
    "deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 1}})
drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
drv.set_script_timeout(10)
try:
    # --- log in through the one-time link -------------------------------
    drv.get(A.owner_link)
    who = wait(lambda: drv.find_element(By.ID, "user").text, 10)
    check(who and who.startswith(A.owner), "the one-time link logs the admin in",
          who)
    check(drv.current_url.rstrip("/#refused") == A.base.rstrip("/") or
          "/login" not in drv.current_url,
          "the link leaves the address bar (redirected to the console)",
          drv.current_url)

    # --- a refused name appears, live ------------------------------------
    wait(lambda: "on" in drv.find_element(By.ID, "live").get_attribute("class"), 10)
    name = "blocked-%d.example.test" % int(time.time())
    t0 = time.monotonic()
    st = dig(name)
    check(st == "REFUSED", "the guest is refused %s" % name, st)
    t1 = time.monotonic()
    got = wait(lambda: row_for(name), 10)
    dt = time.monotonic() - t1
    print("INFO refused name on the page %.2f s after dig returned" % dt,
          flush=True)
    check(got is not None and dt <= 2.0,
          "the refused name is on the Refused page within a second or so "
          "(pushed by SSE)", "%.2f s" % dt)

    # --- hostile names render as text -------------------------------------
    # What a DNS name can carry: no space (it is escaped), but "/" parts
    # attributes as well as a space does.
    hostile = r"\060img/src/onerror\061alert\0961\096\062.test"
    marker = r"\060b/id\061pwned\062.test"
    quoted = r"it\039s\034quoted.test"
    for n in (hostile, marker, quoted):
        dig(n)
    cells = wait(lambda: [c.text for c in drv.find_elements(
        By.CSS_SELECTOR, "#refused-groups td.name") if "onerror" in c.text], 10)
    check(bool(cells) and "<img" in cells[0],
          "a name carrying <img/src/onerror=...> is shown as its text", cells)
    check(wait(lambda: [c for c in drv.find_elements(
        By.CSS_SELECTOR, "#refused-groups td.name") if "pwned" in c.text], 10),
          "a name carrying <b/id=pwned> is shown as its text")
    check(len(drv.find_elements(By.CSS_SELECTOR, "#refused-groups img, #pwned")) == 0,
          "and neither makes an element on the page")
    qcells = wait(lambda: [c.text for c in drv.find_elements(
        By.CSS_SELECTOR, "#refused-groups td.name") if "quoted" in c.text], 10)
    check(bool(qcells), "a name with quotes is shown as text", qcells)
    try:
        drv.switch_to.alert
        check(False, "no script of a guest's name runs", "an alert is open")
    except NoAlertPresentException:
        check(True, "no script of a guest's name runs")
    shot("refused")

    # --- what no grant can open is folded --------------------------------
    subprocess.run(["ip", "netns", "exec", A.guest_ns, "timeout", "3", "bash",
                    "-c", "exec 3<>/dev/tcp/%s/22" % A.lan_host],
                   capture_output=True)
    folded = wait(lambda: [tr for tr in drv.find_elements(
        By.CSS_SELECTOR, "#refused-groups details.never tr")
        if (tr.get_attribute("data-never") or "").startswith(A.lan_host)], 10)
    check(bool(folded), "a probe of a private address is folded, not listed "
          "with allow buttons")
    # (the live list may be redrawn while it is read: read it again)
    check(wait(lambda: not [r for r in drv.find_elements(By.CSS_SELECTOR, "#refused-groups tr[data-name]")
                            if (r.get_attribute("data-name") or "").startswith(A.lan_host)], 5),
          "...and offers no allow button")

    # --- allow for 1 h from the page ---------------------------------------
    # The live list may be redrawn between finding a button and clicking
    # it (a new refusal came): find it again until the click lands.
    def click_allow():
        drv.execute_script("arguments[0].click()",
                           row_for(name).find_element(By.CSS_SELECTOR, "button.allow-1h"))
        return True
    check(wait(click_allow, 10), "the 'allow 1 h' button can be pressed")
    ok = wait(lambda: dig(name) == "NOERROR", 10)
    check(ok, "after 'allow 1 h' the guest resolves %s" % name)
    body = wait(lambda: fetch(name), 10)
    check(body == "hello from the internet", "and fetches it", body)
    drv.get(A.base + "/#grants")
    until = wait(lambda: [tr.find_element(By.CSS_SELECTOR, "td.until").text
                          for tr in drv.find_elements(By.CSS_SELECTOR, "#grants-rows tr")
                          if tr.get_attribute("data-entry") == name], 10)
    check(bool(until) and until[0][:2] == "20" and until[0].endswith("Z"),
          "the grant shows on the Grants page with its end time", until)
    shot("grants")

    # --- revoke ------------------------------------------------------------
    def click_revoke():
        for tr in drv.find_elements(By.CSS_SELECTOR, "#grants-rows tr"):
            if tr.get_attribute("data-entry") == name:
                drv.execute_script("arguments[0].click()",
                                   tr.find_element(By.CSS_SELECTOR, "button.revoke"))
                return True
        return False
    check(wait(click_revoke, 10), "the 'revoke' button can be pressed")
    ok = wait(lambda: dig(name) == "REFUSED", 10)
    check(ok, "'revoke' takes it back: the guest is refused again")
    check(fetch(name) != "hello from the internet",
          "and cannot fetch it any more")

    # --- the Audit page is pushed -------------------------------------------
    drv.get(A.base + "/#audit")
    wait(lambda: drv.find_elements(By.CSS_SELECTOR, "#audit-rows tr td[data-label=event]"), 10)
    aname = "audit-%d.example.test" % int(time.time())
    # Made and watched in the page: the action's answer, then how long
    # until a row of the Audit page names it (no reload in between).
    act_and_watch = """
const [path, fields, name, done] = arguments;
fetch('/api/whoami').then(r => r.json()).then(me =>
  fetch(path, {method: 'POST', headers: {'Content-Type':
    'application/x-www-form-urlencoded', 'X-CSRF-Token': me.csrf},
    body: new URLSearchParams(fields).toString()}))
.then(r => {
  const t0 = performance.now();
  const seen = () => [...document.querySelectorAll('#audit-rows tr')]
    .some((tr) => tr.textContent.includes(name));
  const iv = setInterval(() => {
    const dt = performance.now() - t0;
    if (seen() || dt > 5000) { clearInterval(iv); done([r.status, seen() ? dt / 1000 : -1]); }
  }, 10);
});
"""
    st, dt = drv.execute_async_script(act_and_watch, "/api/allow",
                                      {"sandbox": A.sandbox, "name": aname, "for": "1h"}, aname)
    print("INFO the grant was on the Audit page %.2f s after it was made" % dt, flush=True)
    check(st == 200 and 0 <= dt <= 1.0,
          "a grant shows on the Audit page within a second, without a reload (pushed)",
          "%s %.2f s" % (st, dt))
    drv.find_element(By.ID, "f-event").send_keys("unallow")
    st, dt = drv.execute_async_script(act_and_watch, "/api/unallow",
                                      {"sandbox": A.sandbox, "name": aname}, aname)
    shown = drv.execute_script("return [...document.querySelectorAll("
                               "'#audit-rows td[data-label=event]')].map((td) => td.textContent)")
    check(st == 200 and 0 <= dt <= 1.0 and shown and all("unallow" in e for e in shown),
          "...and its revoke, filtered by event while pushed", "%s %.2f s %s" % (st, dt, shown))
    drv.find_element(By.ID, "f-event").clear()

    # --- live connections on the Sandboxes page ------------------------------
    def live_cell():
        drv.refresh()
        for tr in wait(lambda: drv.find_elements(By.CSS_SELECTOR, "#sandboxes-rows tr[data-sandbox]"), 5) or []:
            if tr.get_attribute("data-sandbox") == A.sandbox:
                return tr.find_element(By.CSS_SELECTOR, "td.conns-live").text
        return None
    drv.get(A.base + "/#sandboxes")
    fd, flag = tempfile.mkstemp(prefix="moat-hold-")
    os.close(fd)
    holder = subprocess.Popen(["ip", "netns", "exec", A.guest_ns, "timeout", "70",
                               "python3", "tests/harness/tcp-idle.py", flag] + [A.hold] * 3,
                              stdout=subprocess.PIPE, text=True)
    try:
        up = holder.stdout.readline().strip()
        check(up == "up 3", "the guest holds 3 connections", up)
        v = wait(lambda: live_cell() == "3", 10)
        check(v, "the Sandboxes page shows them live: 3", live_cell())
        shot("sandboxes")
    finally:
        os.unlink(flag)
        holder.wait(10)
    t1 = time.monotonic()
    v = wait(lambda: live_cell() == "0", 5)
    print("INFO the page showed 0 live %.2f s after they closed" % (time.monotonic() - t1), flush=True)
    check(v, "once they close the page shows 0", live_cell())

    for page in ("audit", "gateway"):
        drv.get(A.base + "/#" + page)
        time.sleep(1.5)
        shot(page)
    sess = [tr.get_attribute("data-session") for tr in
            drv.find_elements(By.CSS_SELECTOR, "#sessions-rows tr[data-session]")]
    check(len(sess) >= 1, "the Gateway page lists the web sessions", sess)
    drv.get(A.base + "/#sandboxes")
    rows = wait(lambda: [tr.text for tr in drv.find_elements(By.CSS_SELECTOR, "#sandboxes-rows tr")], 10)
    check(rows and any(A.sandbox in t for t in rows) and
          any(A.member_sandbox in t for t in rows),
          "the admin's Sandboxes page lists every sandbox", rows)
    cont = wait(lambda: [td.text for td in drv.find_elements(By.CSS_SELECTOR,
            "#sandboxes-rows td[data-label=containment]")], 10)
    check(cont and all(c.startswith("no verdict yet") or "ago" in c for c in cont),
          "each sandbox shows its guest's last containment verdict", cont)
    check(drv.execute_script("return document.documentElement.scrollWidth") <= 400,
          "the page fits a 390-pixel wide phone screen",
          drv.execute_script("return document.documentElement.scrollWidth"))

    # --- a reused link -----------------------------------------------------
    drv.delete_all_cookies()
    drv.get(A.reused_link)
    txt = drv.find_element(By.TAG_NAME, "body").text
    check("unknown, used or expired" in txt, "a used login link is refused", txt)

    # --- a member ----------------------------------------------------------
    drv.get(A.member_link)
    who = wait(lambda: drv.find_element(By.ID, "user").text, 10)
    check(who and who.startswith(A.member), "the member logs in", who)
    drv.get(A.base + "/#sandboxes")
    rows = wait(lambda: [tr.text for tr in drv.find_elements(By.CSS_SELECTOR, "#sandboxes-rows tr")], 10)
    check(rows and any(A.member_sandbox in t for t in rows) and
          not any(A.sandbox + " " in t + " " for t in rows),
          "a member sees only their own sandboxes", rows)
    shot("member-sandboxes")
    forge = """
const done = arguments[arguments.length - 1];
fetch('/api/whoami').then(r => r.json()).then(me =>
  fetch('/api/allow', {method: 'POST', headers: {'Content-Type':
    'application/x-www-form-urlencoded', 'X-CSRF-Token': me.csrf},
    body: new URLSearchParams(arguments[0]).toString()})
  .then(async r => done([r.status, (await r.text()).trim()])));
"""
    st, txt = drv.execute_async_script(forge, {"sandbox": A.sandbox, "name": "x.member.test", "for": "1h"})
    check(st == 403, "a member's forged grant on another's sandbox is refused",
          "%s %s" % (st, txt))
    st, txt = drv.execute_async_script(forge, {"sandbox": A.member_sandbox, "name": "evil.test", "for": "1h"})
    check(st == 403 and "member_allow" in txt or st == 403,
          "a member's grant outside member_allow is refused", "%s %s" % (st, txt))
    st, txt = drv.execute_async_script(forge, {"sandbox": A.member_sandbox, "name": "ok.member.test", "for": "1h"})
    check(st == 200, "a member's grant within member_allow on their own sandbox works",
          "%s %s" % (st, txt))
    drv.get(A.base + "/#grants")
    rows = wait(lambda: [tr.get_attribute("data-sandbox") for tr in
                         drv.find_elements(By.CSS_SELECTOR, "#grants-rows tr[data-sandbox]")], 10)
    check(rows and set(rows) == {A.member_sandbox},
          "a member's Grants page lists their own sandbox's grants only", rows)
finally:
    drv.quit()
