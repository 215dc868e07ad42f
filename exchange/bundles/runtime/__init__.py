"""Files shipped inside bundles, verbatim: the sidecar servers (sql-tools, business-info,
ask-human), the agent's command-line client and the verifiers. Standard library only
(the ask-human sidecar also uses the app's embedded judge, shipped beside it), so they run
in the bundle's images and, for the app's oracle runs and tests, on any Python 3.9+."""
