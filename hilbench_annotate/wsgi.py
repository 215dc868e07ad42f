import os

from django.core.wsgi import get_wsgi_application
from django.db import connections

from hilbench_annotate.celery import broker_warm_up
from hilbench_annotate.toolkit.heap import heap_arenas_limit, heap_freeze
from hilbench_annotate.warmup import register_warmup, urls_warm_up, warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")
heap_arenas_limit()  # before any request thread starts (toolkit/heap.py)
application = get_wsgi_application()
# Each web process loads the judge's model before it serves: the first "Measure the judge" or
# ask_human request must not wait for it. Under `gunicorn --preload` (the documented start
# command) this runs once, in the master, and the workers it forks share the model's memory
# (bench/web_memory.py: about 4 MB of a worker's own instead of 250 MB); a connection the
# warm-up opened is closed first, so no two workers share one. The broker's client code too:
# the first job each worker sent waited for it. And the URLs with every view module they name:
# Django reads them on the first request (0.12 s, 140 modules), which each worker paid.
register_warmup("broker", broker_warm_up)
register_warmup("urls", urls_warm_up)
warm_up("web")
connections.close_all()
heap_freeze()  # the workers forked from here never copy these objects' pages (toolkit/heap.py)
