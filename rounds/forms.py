"""Forms of the round pages: Dynascore weights and model uploads."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from dynabench_site.text import validate_text


class DynascoreForm(forms.Form):
    performance = forms.FloatField(min_value=0, label=_("Performance"))
    throughput = forms.FloatField(min_value=0, label=_("Throughput"))
    memory = forms.FloatField(min_value=0, label=_("Memory"))
    robustness = forms.FloatField(min_value=0, label=_("Robustness"))
    fairness = forms.FloatField(min_value=0, label=_("Fairness"))


class UploadForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[validate_text], label=_("Name"))
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), validators=[validate_text],
                                  label=_("Description"))
