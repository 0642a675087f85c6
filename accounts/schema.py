"""OpenAPI description of API token authentication (loaded by AccountsConfig.ready)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "`Token <key>` (or `Bearer <key>`). Create a token with POST /api/auth/token/ or on the My tokens "
                "page; every token expires (TOKEN_TTL_DAYS). A read-only token (`dro_…`) may only GET, HEAD and "
                "OPTIONS."
            ),
        }
