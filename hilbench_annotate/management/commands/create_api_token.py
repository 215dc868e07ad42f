from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from hilbench_annotate.services.tokens import api_token_create


class Command(BaseCommand):
    help = "Make an API token for a user (e.g. an evaluation harness) and print it once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="cli")

    def handle(self, *args, username, name, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user {username!r}.") from None
        _token, key = api_token_create(user=user, name=name)
        self.stdout.write(key)
