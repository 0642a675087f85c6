"""Pages of accounts: the login page (with its rate limit) and "My tokens" (create, list, revoke)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from accounts import throttles as signin
from accounts import tokens
from accounts.models import ApiToken
from dynabench_site import throttles
from dynabench_site.pages import refused_form, returns_to, throttled_page


class LoginView(auth_views.LoginView):
    """Django's login page with the sign-in limits of accounts.throttles: a refused client gets the form back
    with the message, 429 and Retry-After, and the password is not checked; a successful sign-in remembers
    the client as known-good for the account (device cookie, address)."""

    http_method_names = ["get", "post", "head", "options"]  # not Django's PUT alias of POST

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        wait = signin.login_wait(request, _username(request))
        if wait is not None:
            form = refused_form(self.get_form(), signin.login_refusal(wait))
            return throttled_page(request, self.template_name, self.get_context_data(form=form), wait)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        return signin.login_succeeded(self.request, super().form_valid(form), _username(self.request))

    def form_invalid(self, form):
        signin.login_failed(self.request, _username(self.request))
        return super().form_invalid(form)


def _username(request: HttpRequest) -> str:
    return request.POST.get("username", "")


def admin_login(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    """Django admin's login page with the same sign-in limits (the attempts count with the site's login)."""
    username = _username(request)
    if request.method == "POST" and (wait := signin.login_wait(request, username)) is not None:
        response = render(request, "error.html", {"status": 429, "message": signin.login_refusal(wait)}, status=429)
        response["Retry-After"] = str(wait)
        return response
    response = admin.site.login(request, *args, **kwargs)
    if request.method == "POST" and response.status_code == 200:  # the form again: the sign-in failed
        signin.login_failed(request, username)
    elif request.method == "POST" and response.status_code == 302:  # signed in, on to the admin
        signin.login_succeeded(request, response, username)
    return response


class TokenForm(forms.Form):
    name = forms.CharField(max_length=tokens.MAX_NAME_CHARS, required=False, label=gettext_lazy("Name"),
                           help_text=gettext_lazy("what it is for, e.g. laptop"))
    access = forms.ChoiceField(choices=ApiToken.Access.choices, initial=ApiToken.Access.FULL, widget=forms.RadioSelect,
                               label=gettext_lazy("Access"))


@login_required
def tokens_page(request: HttpRequest) -> HttpResponse:
    """Your tokens; POST creates one and shows its key once (TOKEN_RATE per account)."""
    form = TokenForm(request.POST or None)
    context = {"form": form, "ttl_days": settings.TOKEN_TTL_DAYS}
    if request.method == "POST" and form.is_valid():
        try:
            token, raw = tokens.issue(request.user, form.cleaned_data["name"], form.cleaned_data["access"])
        except throttles.Throttled as refused:  # not a bare translation: the form is shown again with the message
            context["tokens"] = tokens.owned(request.user)
            return throttled_page(request, "accounts/tokens.html", {**context, "form": refused_form(form, refused.message)},
                                  refused.retry_after)
        context.update(new_token=token, new_key=raw, form=TokenForm())
    context["tokens"] = tokens.owned(request.user)
    return render(request, "accounts/tokens.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
@returns_to("accounts-tokens")
def revoke_token(request: HttpRequest, pk: int) -> HttpResponse:
    token = tokens.revoke(request.user, pk)
    messages.success(request, _("Token %(hint)s… (%(name)s) is revoked; it no longer works.")
                     % {"hint": token.hint, "name": token.name or _("unnamed")})
    return redirect("accounts-tokens")
