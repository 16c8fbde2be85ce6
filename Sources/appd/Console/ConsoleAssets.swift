// SPDX-License-Identifier: Apache-2.0
/// The console's page and style, embedded in the binary: no build step, nothing fetched from
/// elsewhere. The script is in ConsoleScript; no inline script anywhere (the CSP forbids it).
enum ConsoleAssets {
    /// The page, with the session's CSRF token for the script to send back.
    static func page(csrf: String, session: String) -> String {
        pageTemplate.replacing("{{csrf}}", with: csrf).replacing("{{session}}", with: session)
    }

    static let script = ConsoleScript.core + ConsoleScript.overview + ConsoleScript.events + ConsoleScript.users + ConsoleScript.metrics

    private static let pageTemplate = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="appd-csrf" content="{{csrf}}">
        <meta name="appd-session" content="{{session}}">
        <title>appd console</title>
        <link rel="stylesheet" href="/console/console.css">
        <script src="/console/console.js" defer></script>
        </head>
        <body>
        <header>
          <h1>appd console</h1>
          <nav aria-label="Pages">
            <a href="#overview" id="nav-overview">Overview</a>
            <a href="#events" id="nav-events">Live events</a>
            <a href="#users" id="nav-users">Users</a>
            <a href="#metrics" id="nav-metrics">Metrics</a>
            <a href="#audit" id="nav-audit">Audit log</a>
          </nav>
          <button type="button" id="sign-out">Sign out</button>
        </header>
        <p id="notice" role="status" aria-live="polite"></p>
        <main>
        <section id="page-overview" aria-labelledby="overview-title">
          <h2 id="overview-title">Overview</h2>
          <dl id="daemon-facts" class="facts"></dl>
          <h3>Plugins</h3>
          <div class="scroll"><table id="plugins">
            <thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Restarts</th><th scope="col">Last error</th><th \
            scope="col">Actions</th></tr></thead>
            <tbody></tbody>
          </table></div>
          <h3>Event log</h3>
          <dl id="event-log" class="facts"></dl>
          <div class="scroll"><table id="consumers">
            <thead><tr><th scope="col">Consumer</th><th scope="col">Position</th><th scope="col">Lag</th></tr></thead>
            <tbody></tbody>
          </table></div>
        </section>
        <section id="page-events" aria-labelledby="events-title" hidden>
          <h2 id="events-title">Live events</h2>
          <form id="events-filter" class="row">
            <label for="events-topics">Topics or patterns (> for all), comma-separated</label>
            <input id="events-topics" name="topics" value=">" autocomplete="off">
            <button type="submit">Apply</button>
            <button type="button" id="events-pause" aria-pressed="false">Pause</button>
            <button type="button" id="events-clear">Clear</button>
          </form>
          <p id="events-state" role="status"></p>
          <div class="scroll"><table id="events">
            <thead><tr><th scope="col">Seq</th><th scope="col">Time</th><th scope="col">Topic</th><th scope="col">Payload</th></tr></thead>
            <tbody></tbody>
          </table></div>
        </section>
        <section id="page-users" aria-labelledby="users-title" hidden>
          <h2 id="users-title">Users</h2>
          <form id="users-search" class="row">
            <label for="users-query">Search by email</label>
            <input id="users-query" name="search" type="search" autocomplete="off">
            <button type="submit">Search</button>
          </form>
          <div class="scroll"><table id="users">
            <thead><tr><th scope="col">Email</th><th scope="col">Name</th><th scope="col">State</th><th scope="col">Created</th><th scope="col">Account</th></tr></thead>
            <tbody></tbody>
          </table></div>
          <button type="button" id="users-more" hidden>More</button>
          <div id="user-detail" hidden>
            <h3 id="user-title"></h3>
            <dl id="user-facts" class="facts"></dl>
            <button type="button" id="user-toggle">Disable account</button>
            <h4>Identities</h4>
            <ul id="user-identities"></ul>
            <h4>Entitlements</h4>
            <div class="scroll"><table id="user-entitlements">
              <thead><tr><th scope="col">Entitlement</th><th scope="col">Active</th><th scope="col">Source</th><th scope="col">Expires</th><th scope="col">Actions</th></tr></thead>
              <tbody></tbody>
            </table></div>
            <form id="grant-form" class="row">
              <label for="grant-entitlement">Entitlement</label>
              <input id="grant-entitlement" name="entitlement" required autocomplete="off">
              <label for="grant-days">Days (empty: for good)</label>
              <input id="grant-days" name="days" type="number" min="1" max="36500">
              <label for="grant-reason">Reason</label>
              <input id="grant-reason" name="reason" required autocomplete="off">
              <button type="submit">Grant</button>
            </form>
            <form id="delete-form" class="row danger">
              <label for="delete-confirm">Type the account's email to delete it and all its data</label>
              <input id="delete-confirm" name="confirm" autocomplete="off">
              <button type="submit" id="delete-user" disabled>Delete account</button>
            </form>
          </div>
        </section>
        <section id="page-metrics" aria-labelledby="metrics-title" hidden>
          <h2 id="metrics-title">Metrics</h2>
          <p>Calls per second and 99th-percentile latency per method, refreshed every 2 seconds (the last two minutes).</p>
          <div id="charts"></div>
        </section>
        <section id="page-audit" aria-labelledby="audit-title" hidden>
          <h2 id="audit-title">Audit log</h2>
          <p>Admin calls and account actions since appd started, newest first (the newest <span id="audit-capacity"></span> lines).</p>
          <button type="button" id="audit-refresh">Refresh</button>
          <div class="scroll"><table id="audit">
            <thead><tr><th scope="col">Time</th><th scope="col">Message</th><th scope="col">Method</th><th scope="col">Outcome</th><th scope="col">Who</th><th \
            scope="col">Details</th></tr></thead>
            <tbody></tbody>
          </table></div>
        </section>
        </main>
        </body>
        </html>
        """

    static let style = """
        :root { color-scheme: light dark; --accent: #2f6fd6; --bad: #c0392b; --ok: #1e8e3e; --line: #8884; font-family: system-ui, sans-serif; }
        body { margin: 0; line-height: 1.4; }
        header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .6rem 1rem; border-bottom: 1px solid var(--line); }
        header h1 { font-size: 1.15rem; margin: 0; }
        nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; flex: 1; }
        nav a { color: inherit; text-decoration: none; padding: .25rem .1rem; border-bottom: 2px solid transparent; }
        nav a[aria-current="page"] { border-bottom-color: var(--accent); font-weight: 600; }
        a:focus-visible, button:focus-visible, input:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
        main { padding: 0 1rem 2rem; max-width: 1200px; }
        #notice { margin: .5rem 1rem; min-height: 1.4em; }
        #notice.error { color: var(--bad); }
        .facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
        .facts dt { font-weight: 600; }
        .facts dd { margin: 0; overflow-wrap: anywhere; }
        .scroll { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; font-size: .92rem; }
        th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        td.payload { font-family: ui-monospace, monospace; font-size: .82rem; overflow-wrap: anywhere; max-width: 40rem; }
        .state-running, .yes { color: var(--ok); font-weight: 600; }
        .state-failed, .state-degraded, .no { color: var(--bad); font-weight: 600; }
        .row { display: flex; flex-wrap: wrap; align-items: center; gap: .4rem .6rem; margin: .6rem 0; }
        input { font: inherit; padding: .25rem .4rem; }
        button { font: inherit; padding: .25rem .7rem; cursor: pointer; }
        button:disabled { cursor: not-allowed; }
        .danger button { color: var(--bad); }
        #charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 1rem; }
        figure { margin: 0; border: 1px solid var(--line); padding: .5rem; }
        figcaption { font-size: .85rem; overflow-wrap: anywhere; }
        canvas { width: 100%; height: auto; }
        @media (max-width: 600px) {
          header { padding: .5rem; }
          main { padding: 0 .5rem 1rem; }
          th, td { padding: .25rem .3rem; }
          .facts { grid-template-columns: 1fr; }
        }
        """
}
