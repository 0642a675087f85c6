"""Forms of the round pages: Dynascore weights and model uploads."""

from __future__ import annotations

from django import forms

from dynabench_site.text import validate_text


class DynascoreForm(forms.Form):
    performance = forms.FloatField(min_value=0)
    throughput = forms.FloatField(min_value=0)
    memory = forms.FloatField(min_value=0)
    robustness = forms.FloatField(min_value=0)
    fairness = forms.FloatField(min_value=0)


class UploadForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[validate_text])
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), validators=[validate_text])
