import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from tests.factories import TaskFactory, UserFactory


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_visitor_signs_up_and_sees_what_to_do_next(browser):
    TaskFactory(slug="nli-demo", name="NLI demo", kind="nli")
    browser.go("/accounts/signup/")
    browser.find_element(By.NAME, "username").send_keys("newcomer")
    browser.find_element(By.NAME, "email").send_keys("newcomer@example.org")
    browser.find_element(By.NAME, "password1").send_keys("a-long-passphrase-42")
    browser.find_element(By.NAME, "password2").send_keys("a-long-passphrase-42")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    WebDriverWait(browser, 10).until(EC.presence_of_element_located((By.ID, "next-steps")))
    assert "newcomer" in browser.find_element(By.CLASS_NAME, "topbar").text
    assert "NLI demo" in browser.find_element(By.ID, "welcome-tasks").text


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_member_logs_in_and_opens_a_task_page(browser):
    TaskFactory(slug="qa-demo", name="QA demo", kind="qa")
    user = UserFactory(username="reader")
    browser.login(user)
    WebDriverWait(browser, 10).until(EC.presence_of_element_located((By.ID, "task-list")))
    browser.find_element(By.LINK_TEXT, "QA demo").click()
    WebDriverWait(browser, 10).until(EC.presence_of_element_located((By.ID, "rounds")))
    assert "Extractive question answering" in browser.find_element(By.TAG_NAME, "h1").text
    assert "highlight its answer" in browser.page_source
