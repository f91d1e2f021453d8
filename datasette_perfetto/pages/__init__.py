"""Browsing pages for trace databases: the tracks list and the track, slice, thread and process details.

Each shows a row's usual fields plus the effective track dimensions (canonical name, raw typed value,
display name, where it was declared) from `track_dimension` when the database has it. One module per page
(tracks.py, track.py, slice.py, thread.py, process.py), shared SQL (and the one tracks list) in data.py,
routes in web.py (on the plugin's request pipeline, datasette_perfetto/web.py), URLs and the `render_cell`
links in links.py; templates are templates/perfetto_{page}.html.
"""

from .web import DETAILS_ROUTE, TRACKS_ROUTE, details_page, tracks_page

ROUTES = [(TRACKS_ROUTE, tracks_page), (DETAILS_ROUTE, details_page)]
