import os

from django.core.wsgi import get_wsgi_application

from hilbench_annotate.warmup import warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")
application = get_wsgi_application()
# Each web process (runserver, every gunicorn worker) loads the judge's model before it
# serves: the first "Measure the judge" or ask_human request must not wait for it.
warm_up()
