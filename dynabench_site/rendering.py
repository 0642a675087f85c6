"""Answers that can always be sent, whatever text is stored.

A lone surrogate (U+D800–DFFF) is a valid Python character but cannot be encoded as UTF-8. The text rule
(`dynabench_site.text`) refuses new ones, but rows stored before it may hold one (a JSON field keeps it as a
`\\ud800` escape), and encoding the answer was where every page and API call showing such a row failed with
a 500. Here:

* `SafeJSONRenderer` (the API's JSON renderer) answers as DRF does and, only when the answer cannot be
  encoded, again with `ensure_ascii`: the surrogate travels as the JSON escape `\\ud800`, which every JSON
  parser reads back, so nothing is lost;
* `SafeTemplates` (the template backend) replaces each surrogate in a rendered page with U+FFFD, the
  character browsers show for text that cannot be displayed.

This module imports no app.
"""

from __future__ import annotations

import copy
from typing import Any

from django.template.backends.django import DjangoTemplates
from django.template.backends.django import Template as DjangoTemplate
from rest_framework.renderers import JSONRenderer

from dynabench_site.text import without_surrogates


class SafeJSONRenderer(JSONRenderer):
    """DRF's JSON renderer; an answer holding a lone surrogate is sent with non-ASCII characters escaped."""

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: dict | None = None) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            escaped = copy.copy(self)
            escaped.ensure_ascii = True
            return JSONRenderer.render(escaped, data, accepted_media_type, renderer_context)


class SafeTemplate(DjangoTemplate):
    def render(self, context: Any = None, request: Any = None) -> str:
        return without_surrogates(super().render(context, request))


class SafeTemplates(DjangoTemplates):
    """Django's template backend whose rendered pages never hold a surrogate (replaced by U+FFFD)."""

    def from_string(self, template_code: str) -> SafeTemplate:
        return SafeTemplate(self.engine.from_string(template_code), self)

    def get_template(self, template_name: str) -> SafeTemplate:
        return SafeTemplate(super().get_template(template_name).template, self)
