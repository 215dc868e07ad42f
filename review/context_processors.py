from review.models import Notification


def nav(request):
    """The unread-notification badge in the top bar (one query per page)."""
    user = getattr(request, "user", None)
    if not user or not user.is_authenticated:
        return {}
    return {"unread_notifications": Notification.objects.filter(user=user, read_at=None).count()}
