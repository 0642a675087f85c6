"""OpenAPI description of read-only token authentication (loaded by ExportsConfig.ready)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ReadOnlyTokenScheme(OpenApiAuthenticationExtension):
    target_class = "exports.authentication.ReadOnlyTokenAuthentication"
    name = "readOnlyToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A read-only token (`dro_…`): GET, HEAD and OPTIONS only.",
        }
