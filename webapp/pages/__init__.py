"""One module per page: PATH, NAME, TITLE, layout(search), register(app)."""
