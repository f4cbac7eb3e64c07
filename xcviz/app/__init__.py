"""What a person looks at: the server and its login pages, the dashboard page, run reports and
exports, and the Panel components of `ui` they are made of. Nothing below imports from here."""
