from django import forms


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, label="Token name", help_text="e.g. eval-harness-1")
