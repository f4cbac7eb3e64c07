"""The login and logout pages of `xcviz serve --basic-auth`, in place of Panel's.

Panel's load their favicon and logo from cdn.holoviz.org: every visit to the login page told a third
party about it, and the page broke offline. These need nothing outside the page. The login page
shows only the message xcviz's own failed login sets (Panel's printed any `?error=` text a link
carried, escaped but free to say "your session expired, call ...")."""
from __future__ import annotations

from jinja2 import Environment

FAILED = "Invalid username or password!"  # the message Panel's login handler redirects with

_STYLE = """<style>
  body { font-family: sans-serif; background: #fafafa; display: flex; align-items: center;
         justify-content: center; height: 100vh; margin: 0; }
  form { background: #fff; border: 1px solid #ddd; padding: 2em; width: 320px; }
  h1 { font-size: 1.6em; text-align: center; margin: 0 0 0.8em; }
  input, button { box-sizing: border-box; width: 100%; padding: 10px; margin-bottom: 0.8em; }
  input { background: #fafafa; border: 1px solid #eee; }
  button { background: #107bba; color: #fff; border: 0; text-transform: uppercase; }
  .error { color: #c00; font-weight: bold; text-align: center; }
</style>"""

_LOGIN = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>xcviz | login</title><link rel="icon" href="data:,">""" + _STYLE + """</head>
<body><form action=".{{ login_endpoint }}" method="post">
  <h1>xcviz</h1>
  {% if errormessage == failed %}<p class="error">{{ failed }}</p>{% endif %}
  <input name="username" type="text" autocapitalize="off" autocorrect="off" placeholder="username">
  <input name="password" type="password" placeholder="password">
  <button type="submit">Log in</button>
</form></body></html>"""

_LOGOUT = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>xcviz | logged out</title><link rel="icon" href="data:,">""" + _STYLE + """</head>
<body><form action=".{{ LOGIN_ENDPOINT }}" method="get">
  <h1>xcviz</h1>
  <p>Logged out.</p>
  <button type="submit">Log in</button>
</form></body></html>"""

_ENV = Environment(autoescape=True)
LOGIN_TEMPLATE = _ENV.from_string(_LOGIN, globals={"failed": FAILED})
LOGOUT_TEMPLATE = _ENV.from_string(_LOGOUT)
