"""Domain errors on pages, in one place (the API's twin is `dynabench_site.api.exception_handler`).

A service raises a `DomainError`; the page view does not catch it. `DomainErrorMiddleware` answers:

- a form view marked with `@returns_to(...)`: back to the page the form is on, with the error shown as a
  message (what a person submitting a form expects: the same page, saying what was wrong), unless the error
  is a refusal for lack of permission (403) or of something that does not exist for them (404);
- anything else: the error page, with the error's status (400, 403, 404, 409, 429, 502, 503) and its message.

The page to go back to is the form's `next` field when it names a page of this site (templates put
`request.get_full_path` there, so filters survive), else the page the view declared.

A page's `Http404` and `PermissionDenied` get the same error page, in the site's layout, whatever `DEBUG`
says (Django's own handlers `handler403`/`handler404`, below, answer them only when `DEBUG` is false), and
so does an address that matches no page. Errors of the server itself keep Django's debug page while
`DEBUG` is true (a developer wants the traceback) and are `500.html` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.contrib.staticfiles import finders
from django.core.exceptions import PermissionDenied
from django.forms import Form
from django.forms.utils import ErrorDict
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import Resolver404, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import cache_control

from dynabench_site.api import error_text
from dynabench_site.errors import DomainError, as_domain_error


@dataclass(frozen=True)
class ReturnsTo:
    url_name: str | None
    url_kwargs: tuple[str, ...]
    say: str

    def url(self, request: HttpRequest) -> str | None:
        """Where to go back: a safe `next` (a path, or a query on the declared page), else the declared page."""
        kwargs = request.resolver_match.kwargs if request.resolver_match else {}
        page = reverse(self.url_name, kwargs={k: kwargs[k] for k in self.url_kwargs}) if self.url_name else None
        return back_url(request, page)

    def message(self, request: HttpRequest, exc: DomainError) -> str:
        kwargs = request.resolver_match.kwargs if request.resolver_match else {}
        return self.say.format(error=error_text(exc), **kwargs)


def returns_to(url_name: str | None = None, *url_kwargs: str, say: str = "{error}") -> Callable:
    """Mark a form view: a domain error it raises sends the user back to the page `url_name` (reversed with
    the view's own URL arguments named in `url_kwargs`) with the message `say` (formatted with `error` and
    the view's URL arguments). With no `url_name`, only the form's `next` field says where to go."""

    def mark(view: Callable) -> Callable:
        view.returns_to = ReturnsTo(url_name, url_kwargs, say)
        return view

    return mark


def refused_form(form: Form, message: str) -> Form:
    """`form` (bound to what was sent) showing `message` as its only error, without validating it: a
    refusal that comes before validation (a rate limit) must not run it (validating a login form checks
    the password)."""
    form.cleaned_data = {}
    form._errors = ErrorDict()
    form.add_error(None, message)
    return form


def throttled_page(request: HttpRequest, template: str, context: dict, wait: int) -> HttpResponse:
    """A form page shown again after a rate limit: 429 with Retry-After (the form carries the message)."""
    response = render(request, template, context, status=429)
    response["Retry-After"] = str(wait)
    return response


def back_url(request: HttpRequest, default: str | None) -> str | None:
    """The form's `next` field when it is a page of this site (or a query string on `default`), else `default`."""
    target = request.POST.get("next", "")
    if target.startswith("?"):
        return f"{default}{target}" if default else None
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


class DomainErrorMiddleware:
    """Turns a domain error raised by a page view into the answer described in this module's docstring.
    API views never reach it: DRF's exception handler answers their errors first."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 404 and settings.DEBUG and getattr(request, "resolver_match", None) is None:
            # No page has this address; with DEBUG, Django would answer its URL-pattern listing instead.
            return error_page(request, 404)
        return response

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if isinstance(exc, Http404):
            return not_found(request, exc)
        if isinstance(exc, PermissionDenied):
            return permission_denied(request, exc)
        exc = as_domain_error(exc)
        if exc is None:
            return None
        view = request.resolver_match.func if request.resolver_match else None
        back: ReturnsTo | None = getattr(view, "returns_to", None)
        # Lack of permission (403) or a thing that does not exist for this user (404) is never a redirect with a
        # message: the error page says it with its status, whatever page the form came from.
        refused = exc.status_code in (403, 404)
        target = back.url(request) if back is not None and request.method == "POST" and not refused else None
        if target is None:
            response = error_page(request, exc.status_code, error_text(exc))
            if getattr(exc, "retry_after", None):
                response["Retry-After"] = str(exc.retry_after)
            return response
        messages.error(request, back.message(request, exc))
        return redirect(target)


ERROR_TEMPLATES = {403: "403.html", 404: "404.html"}


def error_page(request: HttpRequest, status: int, message: str = "") -> HttpResponse:
    """The error page in the site's layout: what went wrong, in one sentence, and where to go from here."""
    context = {"status": status, "message": message, "path": request.path}
    return render(request, ERROR_TEMPLATES.get(status, "error.html"), context, status=status)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404 (DEBUG false): the site's 404 page. Django's own message ("No Task matches …") names code,
    not things a person knows, so only messages our views wrote (`Http404("…")`) are shown."""
    if isinstance(exception, Resolver404) or not isinstance(exception, Http404) or not exception.args:
        return error_page(request, 404)  # no page at this address: the URL patterns tried are not for people
    message = str(exception)
    generic = message.startswith("No ") and "matches the given query" in message
    return error_page(request, 404, "" if generic else message)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403 (DEBUG false; CSRF refusals too): the site's 403 page with the refusal's reason."""
    return error_page(request, 403, str(exception) if exception and exception.args else "")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a refused form in the site's layout, saying what a person can do about it."""
    return error_page(request, 403, "The form could not be sent: its security check (CSRF) failed, because the "
                                    "page was open too long or cookies are off. Reload the page and try again.")


@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, asked for by browsers and tools whatever the page's <link rel=icon> says."""
    path = finders.find("favicon.ico")
    if path is None:  # pragma: no cover - the file ships with the frontend
        raise Http404("no favicon")
    return FileResponse(open(path, "rb"), content_type="image/x-icon")  # noqa: SIM115 - FileResponse closes it
