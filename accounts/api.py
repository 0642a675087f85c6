"""REST API of API tokens: obtain one with a password, list, create and revoke your own.

Views parse, call accounts.tokens and answer; the rules (expiry, who may revoke what, the rate limits)
live there, in accounts.throttles (sign-in) and in dynabench_site.throttles.
"""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import throttles as signin
from accounts import tokens
from accounts.models import ApiToken


class TokenSerializer(serializers.ModelSerializer):
    state = serializers.CharField(read_only=True, help_text="active, expired or revoked")

    class Meta:
        model = ApiToken
        fields = ["id", "name", "access", "hint", "created_at", "expires_at", "last_used_at", "revoked_at", "state"]
        read_only_fields = fields


class NewTokenSerializer(TokenSerializer):
    key = serializers.CharField(read_only=True, help_text="the key, shown this once: keep it secret")
    token = serializers.CharField(read_only=True, help_text="the same key (kept for older clients)")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "key", "token"]
        read_only_fields = fields


class TokenRequestSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=tokens.MAX_NAME_CHARS, default="",
                                 help_text="what the token is for (e.g. 'laptop')")
    access = serializers.ChoiceField(ApiToken.Access.choices, default=ApiToken.Access.FULL)


class CredentialsSerializer(TokenRequestSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False, style={"input_type": "password"})


def new_token_payload(token: ApiToken, raw: str) -> dict:
    return {**TokenSerializer(token).data, "key": raw, "token": raw}


class ObtainTokenView(APIView):
    """POST /api/auth/token/: a new token for a username and password (no session, so no CSRF token)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        summary="Create an API token with your username and password",
        description="Answers the new token with its key (shown once). Every token expires after TOKEN_TTL_DAYS. "
                    "Failed sign-ins are limited per address and per (account, address) (LOGIN_RATE); a client that "
                    "never signed into the account is also refused when the account failed LOGIN_ACCOUNT_RATE "
                    "times from all addresses: 429 with Retry-After.",
        request=CredentialsSerializer,
        responses={200: NewTokenSerializer, 400: OpenApiResponse(description="missing fields or wrong credentials"),
                   429: OpenApiResponse(description="too many attempts")},
        auth=[],
    )
    def post(self, request: Request) -> Response:
        body = CredentialsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        wait = signin.login_wait(request, data["username"])
        if wait is not None:
            raise exceptions.Throttled(wait=wait, detail=signin.login_refusal(wait))
        user = authenticate(request._request, username=data["username"], password=data["password"])
        if user is None or not user.is_active:
            signin.login_failed(request, data["username"])
            raise exceptions.ValidationError({"non_field_errors": ["Unable to log in with provided credentials."]})
        token, raw = tokens.issue(user, data["name"], data["access"])
        response = Response(new_token_payload(token, raw), status=status.HTTP_200_OK)
        return signin.login_succeeded(request, response, data["username"])


class TokenListView(APIView):
    """GET: your tokens (never their keys). POST: a new token, from a signed-in session only."""

    permission_classes = [IsAuthenticated]
    access: str | None = None  # a subclass may serve one kind only (the datasets' read-only tokens)

    @extend_schema(summary="Your API tokens, newest first (keys are never shown again)",
                   responses={200: TokenSerializer(many=True)})
    def get(self, request: Request) -> Response:
        return Response(TokenSerializer(tokens.owned(request.user, self.access), many=True).data)

    @extend_schema(
        summary="Create an API token (signed-in session; a token cannot create another)",
        request=TokenRequestSerializer,
        responses={201: NewTokenSerializer, 400: None, 403: None, 429: None},
    )
    def post(self, request: Request) -> Response:
        if isinstance(request.auth, ApiToken):
            raise exceptions.PermissionDenied(
                "A token cannot create another token; use your password (POST /api/auth/token/) or the My tokens page."
            )
        body = TokenRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        access = self.access or body.validated_data["access"]
        token, raw = tokens.issue(request.user, body.validated_data["name"], access)
        return Response(new_token_payload(token, raw), status=status.HTTP_201_CREATED)


class TokenDetailView(APIView):
    """DELETE: revoke one of your tokens (a token may revoke itself)."""

    permission_classes = [IsAuthenticated]
    access: str | None = None

    @extend_schema(summary="Revoke one of your API tokens", responses={204: None, 404: None})
    def delete(self, request: Request, pk: int) -> Response:
        tokens.revoke(request.user, pk, self.access)
        return Response(status=status.HTTP_204_NO_CONTENT)
