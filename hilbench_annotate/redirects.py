"""Where a form sends the browser afterwards: back to the page it came from (``next``), but
only on this site. An absolute or scheme-relative ``next`` (``https://evil.example``,
``//evil.example``, ``/\\evil.example``) would turn a link to our form into a link to anywhere."""

from django.http import HttpResponseRedirect
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme


def redirect_next(request, default: str) -> HttpResponseRedirect:
    """Redirect to the request's ``next`` (POST, else GET) when it is a path on this host,
    else to ``default``."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(default)
