"""Harbor agents of the project: scripted, no model. They run in Harbor's own environment
(Python 3.12, ``.venv-harbor``), never inside the app: ``harbor run -a
harbor_agents.scripted:AskThenOracle`` with this folder on ``PYTHONPATH``."""
