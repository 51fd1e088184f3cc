"""The web console (/console/) in a real browser: Debian's chromium, headless, driven
through chromedriver (WebDriver). A shared volume's whole cycle through the screens and
dialogs, status changes appearing without a reload, a volume named like an XSS payload
shown as text, a phone-sized screen, and a member of another project seeing nothing.

CONSOLE_SCREENSHOT=path saves the Volumes screen with the shared volume attached twice
(the picture in docs/operations.md)."""

import http.client
import json
import os
import shutil
import threading
import uuid

import pytest
import requests
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import Server, _stores

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER) and not os.environ.get("CI"),
    reason="chromium and chromium-driver are not installed (scripts/test installs them)",
)

XSS_NAME = "<img src=x onerror=alert(1)>"
WAIT = 15


def drained(server):
    """The browser polls: keep reading the log so the service never blocks on a full pipe."""
    threading.Thread(target=lambda: [None for _ in server.process.stdout], daemon=True).start()
    return server


@pytest.fixture(scope="module", params=_stores())
def service(request):
    started = drained(Server(request.param))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def browser():
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,800"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=DriverService(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def wait(driver, predicate, message):
    # The screens are drawn again when their data changes: an element found a moment ago
    # may be gone, so look again.
    try:
        return WebDriverWait(
            driver, WAIT, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException]
        ).until(lambda d: predicate(d), message)
    except TimeoutException:
        main = driver.find_element(By.TAG_NAME, "body").get_attribute("outerHTML")
        raise AssertionError(f"waited in vain for {message}; the page:\n{main[:4000]}") from None


def open_console(driver, url):
    """The console's first page, with no session left from an earlier test."""
    driver.get(f"{url}/console/")
    driver.execute_script("sessionStorage.clear()")
    driver.get(f"{url}/console/")


def sign_in(driver, url, token):
    open_console(driver, url)
    field = wait(driver, lambda d: d.find_elements(By.ID, "token"), "the sign-in form")[0]
    field.send_keys(token)
    driver.find_element(By.ID, "sign-in-button").click()
    wait(driver, lambda d: d.find_elements(By.ID, "volumes-table"), "the Volumes screen")


def sign_out(driver):
    driver.find_element(By.ID, "sign-out").click()
    wait(driver, lambda d: d.find_elements(By.ID, "sign-in"), "the sign-in form again")


def volume_row(driver, volume_id):
    rows = driver.find_elements(By.CSS_SELECTOR, f'#volumes-table tr[data-volume-id="{volume_id}"]')
    return rows[0] if rows else None


def cell(row, label):
    return row.find_element(By.CSS_SELECTOR, f'td[data-label="{label}"]')


def attach_in_dialog(driver, instance, host, mode):
    before = len(driver.find_elements(By.CSS_SELECTOR, "#dialog-attachments-table tr[data-attachment-id]"))
    driver.find_element(By.ID, "attach-instance").send_keys(instance)
    driver.find_element(By.ID, "attach-host").send_keys(host)
    Select(driver.find_element(By.ID, "attach-mode")).select_by_value(mode)
    driver.find_element(By.ID, "attach-submit").click()
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#dialog-attachments-table tr[data-attachment-id]"))
         == before + 1, f"the {mode} attachment in the dialog")


def no_alert(driver):
    try:
        driver.switch_to.alert
    except NoAlertPresentException:
        return True
    return False


def test_the_console_is_served_with_a_strict_policy(service):
    page = requests.get(f"{service.url}/console/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    # No inline script or style: everything comes from the two files the policy allows.
    assert "<script src=\"app.js\"" in page.text and "<script>" not in page.text and "style=" not in page.text
    script = requests.get(f"{service.url}/console/app.js")
    assert script.status_code == 200 and "innerHTML" not in script.text
    assert requests.get(f"{service.url}/console", allow_redirects=False).headers["location"] == "/console/"
    refused = requests.post(f"{service.url}/console/session", json={"username": "u", "password": "p"})
    assert refused.status_code == 401
    assert "noauth" in refused.json()["unauthorized"]["message"]


def sign_in_from(url, source_ip, body):
    """POST /console/session over a socket bound to `source_ip` (any 127.x address
    reaches loopback), so the service sees a client of that address."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10, source_address=(source_ip, 0))
    try:
        connection.request("POST", "/console/session", body=json.dumps(body),
                           headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        headers = {name.lower(): value for name, value in answer.getheaders()}
        return answer.status, headers, json.loads(answer.read() or b"null")
    finally:
        connection.close()


def test_failed_sign_ins_are_limited_per_client_address():
    """Five failures from one address hold that address back (429, Retry-After) while
    another address signs in."""
    server = drained(Server("sqlite"))
    try:
        for _ in range(5):
            status, _, _ = sign_in_from(server.url, "127.0.0.1", {"token": " "})
            assert status == 401
        status, headers, body = sign_in_from(server.url, "127.0.0.1", {"token": "admin:p1"})
        assert status == 429, body
        assert 1 <= int(headers["retry-after"]) <= 60
        assert "Too many failed sign-ins" in body["overLimit"]["message"]
        status, _, body = sign_in_from(server.url, "127.0.0.2", {"token": "admin:p1"})
        assert status == 200, body
        assert body["session"]["project_id"] == "p1"
    finally:
        server.stop()


def test_a_shared_volume_through_the_console(service, browser):
    driver = browser
    sign_in(driver, service.url, "admin:p1")
    assert "admin:p1" not in driver.current_url, "the token never goes into a URL"

    # An administrator makes a shareable type on the Volume types screen.
    type_name = f"shared-{uuid.uuid4().hex[:6]}"
    driver.find_element(By.ID, "nav-types").click()
    wait(driver, lambda d: d.find_elements(By.ID, "create-type"), "the type form")
    driver.find_element(By.ID, "type-name").send_keys(type_name)
    driver.find_element(By.ID, "type-multiattach").click()
    driver.find_element(By.ID, "type-max").send_keys("4")
    driver.find_element(By.ID, "create-type-submit").click()

    def type_row(d):
        rows = [r for r in d.find_elements(By.CSS_SELECTOR, "#types-table tr[data-type-id]")
                if cell(r, "Name").text == type_name]
        return rows[0] if rows else None

    row = wait(driver, type_row, "the new type in the list")
    assert cell(row, "Shareable").text == "Yes"
    assert cell(row, "Max attachments").text == "4"

    # Create a shareable volume whose name is an XSS payload.
    driver.find_element(By.ID, "nav-volumes").click()
    wait(driver, lambda d: d.find_elements(By.ID, "create-volume"), "the Volumes screen")
    driver.find_element(By.ID, "create-volume").click()
    wait(driver, lambda d: d.find_elements(By.ID, "create-volume-dialog"), "the Create Volume dialog")
    driver.find_element(By.ID, "volume-name").send_keys(XSS_NAME)
    driver.find_element(By.ID, "shareable").click()
    Select(driver.find_element(By.ID, "volume-type")).select_by_visible_text(f"{type_name} (shareable)")
    driver.find_element(By.ID, "create-volume-submit").click()
    wait(driver, lambda d: not d.find_elements(By.ID, "create-volume-dialog"), "the dialog to close")

    headers = {"X-Auth-Token": "admin:p1", "OpenStack-API-Version": "volume 3.54"}
    volumes = requests.get(f"{service.url}/v3/p1/volumes/detail", headers=headers).json()["volumes"]
    volume = next(v for v in volumes if v["name"] == XSS_NAME)
    assert volume["multiattach"] is True and volume["volume_type"] == type_name
    row = wait(driver, lambda d: volume_row(d, volume["id"]), "the volume in the list")
    wait(driver, lambda d: cell(volume_row(d, volume["id"]), "Status").text == "available", "available")
    row = volume_row(driver, volume["id"])
    assert cell(row, "Name").text == XSS_NAME, "the name is shown as text"
    assert cell(row, "Shareable").text == "Yes"
    assert not driver.find_elements(By.CSS_SELECTOR, "main img"), "no element came out of the name"

    # Attach it to two instances, one rw and one ro, in the Edit Attachments dialog.
    cell(row, "Actions").find_element(By.CSS_SELECTOR, '[data-action="edit-attachments"]').click()
    wait(driver, lambda d: d.find_elements(By.ID, "attach-form"), "the Edit Attachments dialog")
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    attach_in_dialog(driver, first, "compute-1", "rw")
    attach_in_dialog(driver, second, "compute-2", "ro")
    driver.find_element(By.CSS_SELECTOR, "#attachments-dialog .row button.secondary").click()

    def attached_to(d):
        r = volume_row(d, volume["id"])
        return [li.text for li in cell(r, "Attached To").find_elements(By.TAG_NAME, "li")] if r else []

    shown = wait(driver, lambda d: len(attached_to(d)) == 2 and attached_to(d), "both attachments in the list")
    assert any(first in item and "rw" in item for item in shown), shown
    assert any(second in item and "ro" in item for item in shown), shown
    wait(driver, lambda d: cell(volume_row(d, volume["id"]), "Status").text == "in-use", "in-use")
    if os.environ.get("CONSOLE_SCREENSHOT"):
        driver.save_screenshot(os.environ["CONSOLE_SCREENSHOT"])

    # The detail screen: detach the rw attachment there.
    cell(volume_row(driver, volume["id"]), "Name").find_element(By.TAG_NAME, "a").click()
    wait(driver, lambda d: d.find_elements(By.ID, "attachments-table"), "the Volume Detail screen")
    assert driver.find_element(By.ID, "volume-title").text == XSS_NAME
    detail_rows = lambda d: d.find_elements(By.CSS_SELECTOR, "#attachments-table tr[data-attachment-id]")
    rw_row = next(r for r in detail_rows(driver) if cell(r, "Server").text == first)
    assert cell(rw_row, "Mode").text == "rw" and cell(rw_row, "Status").text == "attached"
    cell(rw_row, "Actions").find_element(By.TAG_NAME, "button").click()
    wait(driver, lambda d: [cell(r, "Server").text for r in detail_rows(d)] == [second], "the rw attachment gone")

    # A change made elsewhere shows up without a reload.
    made = requests.post(
        f"{service.url}/v3/p1/attachments", headers=headers,
        json={"attachment": {"volume_uuid": volume["id"], "instance_uuid": str(uuid.uuid4()),
                             "connector": {"host": "compute-3"}, "mode": "ro"}},
    )
    assert made.status_code == 200, made.text
    wait(driver, lambda d: len(detail_rows(d)) == 2, "the attachment made elsewhere")
    assert no_alert(driver), "no script ran from the volume's name"

    # A phone-sized screen: nothing wider than the screen, every column still named.
    driver.set_window_size(390, 844)
    try:
        driver.find_element(By.ID, "nav-volumes").click()
        row = wait(driver, lambda d: volume_row(d, volume["id"]), "the list on a phone")
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        assert cell(row, "Attached To").is_displayed()
    finally:
        driver.set_window_size(1280, 800)

    # A member of another project sees none of it.
    sign_out(driver)
    sign_in(driver, service.url, "someone:p2:member,reader")
    assert volume_row(driver, volume["id"]) is None
    driver.get(f"{service.url}/console/#/volumes/{volume['id']}")
    notice = wait(driver, lambda d: d.find_element(By.ID, "notice").text, "an error for another project's volume")
    assert "could not be found" in notice
    assert not driver.find_elements(By.ID, "create-type"), "a member is offered no type form"
    sign_out(driver)


def test_errors_show_cinders_message(service, browser):
    driver = browser
    sign_in(driver, service.url, "admin:p1")
    driver.find_element(By.ID, "create-volume").click()
    wait(driver, lambda d: d.find_elements(By.ID, "create-volume-dialog"), "the Create Volume dialog")
    size = driver.find_element(By.ID, "volume-size")
    size.clear()
    size.send_keys("100000")
    driver.find_element(By.ID, "create-volume-submit").click()
    error = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#create-volume-dialog .error").text,
                 "the refusal")
    assert "quota" in error.lower() or "size" in error.lower(), error
    driver.find_element(By.CSS_SELECTOR, "#create-volume-dialog .row button.secondary").click()
    sign_out(driver)


@pytest.mark.skipif(not os.environ.get("KEYSTONE_URL"), reason="KEYSTONE_URL is not set")
def test_keystone_users_sign_in_with_their_password(browser):
    from test_keystone import ADMIN_PASSWORD, KEYSTONE, KEYSTONE_CAFILE, KEYSTONE_TLS, provision, server_behind

    accounts = provision(KEYSTONE, ADMIN_PASSWORD, KEYSTONE_TLS, KEYSTONE_CAFILE)
    service = drained(server_behind(accounts))
    driver = browser
    try:
        open_console(driver, service.url)

        def fill(password):
            wait(driver, lambda d: d.find_elements(By.ID, "username"), "the password form")
            for field, value in (("username", accounts["user"]), ("password", password),
                                 ("project", accounts["project"])):
                element = driver.find_element(By.ID, field)
                element.clear()
                element.send_keys(value)
            driver.find_element(By.ID, "sign-in-button").click()

        fill("wrong")
        refused = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#sign-in .error").text, "the refusal")
        assert "not right" in refused, refused
        fill("pw")
        wait(driver, lambda d: d.find_elements(By.ID, "volumes-table"), "the Volumes screen")
        assert accounts["project_id"] in driver.find_element(By.ID, "who").text
        assert "pw" not in driver.current_url

        # The token works for the volume API: a volume made in the dialog shows up.
        driver.find_element(By.ID, "create-volume").click()
        wait(driver, lambda d: d.find_elements(By.ID, "create-volume-dialog"), "the Create Volume dialog")
        driver.find_element(By.ID, "volume-name").send_keys("from-keystone")
        driver.find_element(By.ID, "create-volume-submit").click()
        wait(driver, lambda d: any(cell(r, "Name").text == "from-keystone"
                                   for r in d.find_elements(By.CSS_SELECTOR, "#volumes-table tr[data-volume-id]")),
             "the volume in the list")
        sign_out(driver)
    finally:
        service.stop()
