// SPDX-License-Identifier: Apache-2.0
/// The console's script, in parts (one per page), served as one file. Plain JavaScript run by
/// the browser as written: no build step, no library. Text from appd is only ever put into the
/// page as text (textContent), never as markup.
enum ConsoleScript {
    /// Helpers every page uses: elements, calls with the CSRF token, notices, navigation.
    static let core = #"""
        "use strict";
        const appd = {
          csrf: document.querySelector('meta[name="appd-csrf"]').content,
          pages: {},
          current: null,
        };

        function el(tag, attributes, ...children) {
          const node = document.createElement(tag);
          for (const [key, value] of Object.entries(attributes || {})) {
            if (value === undefined || value === null || value === false) continue;
            if (key === "className") node.className = value;
            else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
            else node.setAttribute(key, value === true ? "" : String(value));
          }
          for (const child of children) {
            if (child === undefined || child === null) continue;
            node.append(child instanceof Node ? child : document.createTextNode(String(child)));
          }
          return node;
        }

        function notice(text, isError) {
          const node = document.getElementById("notice");
          node.textContent = text || "";
          node.className = isError ? "error" : "";
        }

        function signedOut() {
          notice("Signed out: run 'appctl console' for a new link.", true);
          document.querySelector("main").hidden = true;
        }

        async function request(method, path, body) {
          const options = { method, credentials: "same-origin", headers: {} };
          if (method !== "GET") {
            options.headers["X-Appd-Csrf"] = appd.csrf;
            options.headers["Content-Type"] = "application/json";
            options.body = JSON.stringify(body || {});
          }
          const response = await fetch(path, options);
          let reply = {};
          try { reply = await response.json(); } catch (e) { reply = {}; }
          if (response.status === 401) { signedOut(); throw new Error("signed out"); }
          if (!response.ok) {
            const name = reply.error || ("HTTP " + response.status);
            const detail = reply.parameters ? JSON.stringify(reply.parameters) : (reply.reason || "");
            throw new Error(name + (detail && detail !== "{}" ? " " + detail : ""));
          }
          return reply;
        }

        function call(method, parameters) {
          return request("POST", "/console/api/call/" + method, parameters);
        }

        async function act(label, work) {
          notice(label + "…");
          try {
            await work();
            notice(label + ": done.");
            return true;
          } catch (error) {
            notice(label + " failed: " + error.message, true);
            return false;
          }
        }

        function fill(tbody, rows) {
          tbody.replaceChildren(...rows);
        }

        function facts(dl, pairs) {
          dl.replaceChildren(...pairs.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value === null || value === undefined ? "—" : value)]));
        }

        function duration(seconds) {
          const s = Math.floor(seconds);
          const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
          return (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + (s % 60) + "s";
        }

        function show(name) {
          if (!appd.pages[name]) name = "overview";
          for (const [key, page] of Object.entries(appd.pages)) {
            const section = document.getElementById("page-" + key);
            const active = key === name;
            section.hidden = !active;
            const link = document.getElementById("nav-" + key);
            if (active) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
            if (!active && page.leave) page.leave();
          }
          if (appd.current !== name) notice("");
          appd.current = name;
          appd.pages[name].enter();
        }

        document.addEventListener("DOMContentLoaded", () => {
          document.getElementById("sign-out").addEventListener("click", async () => {
            try { await request("POST", "/console/api/logout"); } catch (e) { /* signed out either way */ }
            signedOut();
          });
          window.addEventListener("hashchange", () => show(location.hash.slice(1)));
          for (const page of Object.values(appd.pages)) if (page.setUp) page.setUp();
          show(location.hash.slice(1));
        });

        """#

    /// The overview: the daemon, its plugins (with their buttons) and the event log.
    static let overview = #"""
        appd.pages.overview = {
          timer: null,
          enter() {
            this.load();
            this.timer = setInterval(() => this.load(), 3000);
          },
          leave() { clearInterval(this.timer); },
          async load() {
            let status;
            try { status = await call("io.appd.Daemon.Status"); } catch (error) { notice("Status failed: " + error.message, true); return; }
            facts(document.getElementById("daemon-facts"), [
              ["Version", status.version], ["Process", status.pid], ["Uptime", duration(status.uptimeSeconds)],
              ["Connections", status.connections],
              ["Bus", status.bus.commands + " commands, " + status.bus.events + " events, " + status.bus.subscriptions + " subscriptions"],
              ["Database", status.paths ? status.paths.database : null],
              ["Last backup", status.backups ? (status.backups.lastAt || "none") + (status.backups.lastError ? " (failing: " + status.backups.lastError + ")" : "") : null],
            ]);
            const browsers = await call("io.appd.Console.Sessions").then((r) => r.sessions, () => []);
            document.getElementById("daemon-facts").append(el("dt", {}, "Console sessions"),
              el("dd", {}, browsers.map((s) => s.id + " (uid " + s.uid + ", from " + s.address + ")").join(", ") || "—"));
            fill(document.querySelector("#plugins tbody"), status.plugins.map((plugin) => this.row(plugin)));
            facts(document.getElementById("event-log"), [["Head (last sequence)", status.eventLog.lastSeq]]);
            fill(document.querySelector("#consumers tbody"), status.eventLog.consumers.map((consumer) =>
              el("tr", {}, el("td", {}, consumer.name), el("td", {}, consumer.position), el("td", { className: consumer.lag > 0 ? "no" : "" }, consumer.lag))));
          },
          row(plugin) {
            const actions = el("td", {});
            if (plugin.kind === "external") {
              const button = (label, method) => el("button", {
                type: "button", "aria-label": label + " " + plugin.name,
                onclick: async () => { if (await act(label + " " + plugin.name, () => call(method, { name: plugin.name }))) this.load(); },
              }, label);
              actions.append(button("Restart", "io.appd.Daemon.RestartPlugin"), " ");
              actions.append(plugin.state === "stopped"
                ? button("Enable", "io.appd.Daemon.EnablePlugin")
                : button("Disable", "io.appd.Daemon.DisablePlugin"));
            } else {
              actions.append("built in");
            }
            return el("tr", { "data-plugin": plugin.name },
              el("td", {}, plugin.name), el("td", {}, plugin.kind),
              el("td", { className: "state-" + plugin.state }, plugin.state),
              el("td", {}, plugin.restarts), el("td", {}, plugin.lastError || "—"), actions);
          },
        };

        """#
}
