"""Authoring pages: ``workspace`` (the page, saving it, a section's diff, a blocker fieldset,
the instructions preview), ``lint`` (live lint, waivers), ``revisions`` (history, restore),
``sql`` (console, gold SQL, tables) and ``repository`` (browser, setup patch); ``common`` holds
what they share."""
