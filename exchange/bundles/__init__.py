"""Export bundles in the HiL-Bench layout, and import them (and the release's) back.

``layout`` names the files and writes the non-data ones; ``writer`` streams tasks into a
reproducible ``.tar.gz``; ``provenance`` makes validation.json and review.json;
``repository`` ships a SWE task's sanitized repository; ``exchange.importers.bundle`` verifies
and imports a bundle.
The format is described in docs/bundle/README.md with a JSON Schema per JSON file.
"""
