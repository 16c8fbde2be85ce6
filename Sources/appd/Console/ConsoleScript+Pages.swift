// SPDX-License-Identifier: Apache-2.0
/// The console's live events, users, metrics and audit pages.
extension ConsoleScript {
    /// Live events: io.appd.Bus.Subscribe as the admin, over server-sent events.
    static let events = #"""
        appd.pages.events = {
          source: null, paused: false, skipped: 0, shown: 0, limit: 500,
          setUp() {
            document.getElementById("events-filter").addEventListener("submit", (event) => { event.preventDefault(); this.connect(); });
            document.getElementById("events-pause").addEventListener("click", (event) => {
              this.paused = !this.paused;
              event.target.setAttribute("aria-pressed", String(this.paused));
              event.target.textContent = this.paused ? "Resume" : "Pause";
              this.state();
            });
            document.getElementById("events-clear").addEventListener("click", () => {
              document.querySelector("#events tbody").replaceChildren();
              this.shown = 0;
            });
          },
          enter() { this.connect(); },
          leave() { if (this.source) { this.source.close(); this.source = null; } },
          state(text) {
            const words = text || (this.source && this.source.readyState === 1 ? "Connected" : "Connecting");
            document.getElementById("events-state").textContent = words + (this.paused ? " — paused, " + this.skipped + " events not shown" : "");
          },
          connect() {
            this.leave();
            const topics = document.getElementById("events-topics").value.trim() || ">";
            this.source = new EventSource("/console/api/events?topics=" + encodeURIComponent(topics));
            this.source.addEventListener("open", () => this.state());
            this.source.addEventListener("reply", (message) => this.add(JSON.parse(message.data)));
            this.source.addEventListener("error", (message) => {
              if (message.data) { this.state("Refused: " + message.data); this.leave(); return; }
              if (this.source && this.source.readyState === EventSource.CLOSED) {
                // The browser gave up (the session ended, or appd stopped): say which.
                this.state("Disconnected");
                request("GET", "/console/api/session").catch(() => {});
                return;
              }
              this.state("Disconnected, retrying");
            });
            this.state();
          },
          add(event) {
            if (this.paused) { this.skipped += 1; this.state(); return; }
            const tbody = document.querySelector("#events tbody");
            const payload = event.redacted ? "(erased with its account)" : JSON.stringify(event.payload);
            tbody.prepend(el("tr", { "data-topic": event.topic },
              el("td", {}, event.seq === undefined || event.seq === null ? "—" : event.seq),
              el("td", {}, event.time), el("td", {}, event.topic), el("td", { className: "payload" }, payload)));
            this.shown += 1;
            while (tbody.children.length > this.limit) tbody.lastElementChild.remove();
          },
        };

        """#

    /// Users: search, one account's identities and entitlements, disable, grant, revoke, delete.
    static let users = #"""
        appd.pages.users = {
          cursor: null, selected: null,
          setUp() {
            document.getElementById("users-search").addEventListener("submit", (event) => { event.preventDefault(); this.search(false); });
            document.getElementById("users-more").addEventListener("click", () => this.search(true));
            document.getElementById("user-toggle").addEventListener("click", () => this.toggle());
            document.getElementById("grant-form").addEventListener("submit", (event) => { event.preventDefault(); this.grant(); });
            const confirm = document.getElementById("delete-confirm");
            confirm.addEventListener("input", () => {
              document.getElementById("delete-user").disabled = !this.selected || confirm.value !== this.selected.user.email;
            });
            document.getElementById("delete-form").addEventListener("submit", (event) => { event.preventDefault(); this.remove(); });
          },
          enter() { if (!this.loaded) { this.loaded = true; this.search(false); } },
          async search(more) {
            const search = document.getElementById("users-query").value.trim();
            let page;
            try {
              page = await call("io.appd.Auth.ListUsers", { search: search || null, cursor: more ? this.cursor : null, limit: 50 });
            } catch (error) { notice("Listing users failed: " + error.message, true); return; }
            this.cursor = page.nextCursor || null;
            document.getElementById("users-more").hidden = !this.cursor;
            const rows = page.users.map((user) => el("tr", { "data-email": user.email },
              el("td", {}, user.email || "(guest)"), el("td", {}, user.displayName || "—"),
              el("td", { className: user.disabled ? "no" : "yes" }, user.disabled ? "disabled" : "enabled"),
              el("td", {}, user.createdAt),
              el("td", {}, user.email ? el("button", { type: "button", "aria-label": "Open " + user.email, onclick: () => this.open(user.email) }, "Open") : "—")));
            const tbody = document.querySelector("#users tbody");
            if (more) tbody.append(...rows); else fill(tbody, rows);
            if (!more && page.users.length === 0) notice("No account's email contains '" + search + "'.");
          },
          async open(email) {
            try {
              const detail = await call("io.appd.Auth.GetUser", { email });
              const status = await call("io.appd.Payments.UserStatus", { email }).catch((error) => ({ entitlements: [], meters: [], failed: error.message }));
              this.selected = { user: detail.user, identities: detail.identities, status };
            } catch (error) { notice("Opening " + email + " failed: " + error.message, true); return; }
            this.render();
            document.getElementById("user-title").focus();
          },
          render() {
            const { user, identities, status } = this.selected;
            document.getElementById("user-detail").hidden = false;
            const title = document.getElementById("user-title");
            title.textContent = user.email;
            title.setAttribute("tabindex", "-1");
            facts(document.getElementById("user-facts"), [
              ["Id", user.id], ["Name", user.displayName], ["State", user.disabled ? "disabled" : "enabled"],
              ["Onboarded", user.onboarded ? "yes" : "no"], ["Created", user.createdAt],
              ["Meters", status.failed ? "unavailable: " + status.failed : status.meters.map((m) => m.name + " " + m.used + "/" + (m.unlimited ? "∞" : m.limit)).join(", \#
              ") || "none"],
            ]);
            const toggle = document.getElementById("user-toggle");
            toggle.textContent = user.disabled ? "Enable account" : "Disable account";
            fill(document.getElementById("user-identities"), identities.length
              ? identities.map((identity) => el("li", {}, identity.provider + " — " + (identity.email || "no email") + ", linked " + identity.linkedAt))
              : [el("li", {}, "none (email and password only)")]);
            fill(document.querySelector("#user-entitlements tbody"), status.entitlements.map((entitlement) => el("tr", { "data-entitlement": entitlement.name },
              el("td", {}, entitlement.name), el("td", { className: entitlement.active ? "yes" : "no" }, entitlement.active ? "active" : "inactive"),
              el("td", {}, entitlement.source || "—"), el("td", {}, entitlement.expiresAt || (entitlement.active ? "never" : "—")),
              el("td", {}, entitlement.active ? el("button", { type: "button", "aria-label": "Revoke " + entitlement.name, onclick: () => this.revoke(entitlement.name) \#
              }, "Revoke") : "—"))));
            document.getElementById("delete-confirm").value = "";
            document.getElementById("delete-user").disabled = true;
          },
          async toggle() {
            const user = this.selected.user;
            const method = user.disabled ? "io.appd.Auth.EnableUser" : "io.appd.Auth.DisableUser";
            if (await act((user.disabled ? "Enable " : "Disable ") + user.email, () => call(method, { email: user.email }))) await this.reload();
          },
          async grant() {
            const email = this.selected.user.email;
            const entitlement = document.getElementById("grant-entitlement").value.trim();
            const days = parseInt(document.getElementById("grant-days").value, 10);
            const reason = document.getElementById("grant-reason").value.trim();
            const expiresAt = days > 0 ? new Date(Date.now() + days * 86400000).toISOString().replace(/\.\d{3}Z$/, "Z") : null;
            if (await act("Grant " + entitlement + " to " + email, () => call("io.appd.Payments.Grant", { email, entitlement, expiresAt, reason }))) await this.reload();
          },
          async revoke(entitlement) {
            const email = this.selected.user.email;
            if (await act("Revoke " + entitlement + " from " + email, () => call("io.appd.Payments.Revoke", { email, entitlement, reason: "revoked in the console" }))) \#
            await this.reload();
          },
          async remove() {
            const email = this.selected.user.email;
            if (document.getElementById("delete-confirm").value !== email) return;
            if (await act("Delete " + email, () => call("io.appd.Auth.DeleteUser", { email }))) {
              this.selected = null;
              document.getElementById("user-detail").hidden = true;
              this.search(false);
            }
          },
          async reload() {
            await this.open(this.selected.user.email);
            this.search(false);
          },
        };

        """#

    /// Metrics and the audit log.
    static let metrics = #"""
        appd.pages.metrics = {
          timer: null, previous: null, history: {}, points: 60,
          enter() { this.sample(); this.timer = setInterval(() => this.sample(), 2000); },
          leave() { clearInterval(this.timer); this.previous = null; this.history = {}; },
          async sample() {
            let now;
            try { now = await request("GET", "/console/api/metrics"); } catch (error) { notice("Metrics failed: " + error.message, true); return; }
            if (!this.previous) {
              // First load: the last minute appd kept, so the charts start full, not empty.
              const past = (now.history || []).filter((snapshot) => snapshot.at < now.at);
              for (let i = 1; i < past.length; i++) this.add(past[i - 1], past[i]);
              this.previous = past.length ? past[past.length - 1] : null;
            }
            const before = this.previous;
            this.previous = now;
            if (before) this.add(before, now);
            this.render();
          },
          add(before, now) {
            const seconds = Math.max(0.001, now.at - before.at);
            const old = new Map(before.methods.map((m) => [m.method + " " + m.transport, m]));
            for (const series of now.methods) {
              const key = series.method + " " + series.transport;
              const last = old.get(key) || { count: 0, buckets: series.buckets.map(() => 0) };
              const calls = series.count - last.count;
              const counts = series.buckets.map((count, i) => count - (last.buckets[i] || 0));
              const history = this.history[key] || (this.history[key] = []);
              history.push({ rate: calls / seconds, p99: this.quantile(counts, now.bounds, 0.99) });
              if (history.length > this.points) history.shift();
            }
          },
          quantile(counts, bounds, q) {
            const total = counts.reduce((a, b) => a + b, 0);
            if (total === 0) return null;
            let seen = 0;
            for (let i = 0; i < counts.length; i++) {
              seen += counts[i];
              if (seen >= q * total) return i < bounds.length ? bounds[i] : bounds[bounds.length - 1];
            }
            return bounds[bounds.length - 1];
          },
          render() {
            const keys = Object.keys(this.history).filter((key) => this.history[key].some((point) => point.rate > 0)).sort();
            const charts = document.getElementById("charts");
            if (keys.length === 0) { charts.replaceChildren(el("p", {}, "No calls in the last minute.")); return; }
            charts.replaceChildren(...keys.map((key) => {
              const history = this.history[key];
              const last = history[history.length - 1];
              const p99 = last.p99 === null ? "—" : (last.p99 * 1000).toFixed(1) + " ms";
              const canvas = el("canvas", { width: 300, height: 90, role: "img", "aria-label": key + ": " + last.rate.toFixed(1) + " calls per second, p99 " + p99 });
              this.draw(canvas, history);
              return el("figure", { "data-method": key, "data-points": history.length }, canvas,
                el("figcaption", {}, key + " — " + last.rate.toFixed(1) + " calls/s (blue), p99 ≤ " + p99 + " (red)"));
            }));
          },
          draw(canvas, history) {
            const context = canvas.getContext("2d");
            const { width, height } = canvas;
            const line = (values, color, label, row) => {
              const top = Math.max(...values.filter((v) => v !== null), 1e-9);
              context.fillStyle = color;
              context.font = "11px system-ui, sans-serif";
              context.fillText(label(top), 4, 12 * row);
              context.strokeStyle = color;
              context.lineWidth = 2;
              context.beginPath();
              // The newest point at the right edge; a lone point is drawn as a short level line.
              const series = values.length === 1 ? [values[0], values[0]] : values;
              const step = width / (this.points - 1);
              series.forEach((value, i) => {
                const x = width - (series.length - 1 - i) * step;
                const y = height - 4 - ((value || 0) / top) * (height - 8);
                if (i === 0) context.moveTo(x, y); else context.lineTo(x, y);
              });
              context.stroke();
            };
            context.clearRect(0, 0, width, height);
            line(history.map((p) => p.rate), "#2f6fd6", (top) => "top " + top.toFixed(1) + " calls/s", 1);
            line(history.map((p) => p.p99), "#c0392b", (top) => "top " + (top * 1000).toFixed(1) + " ms p99", 2);
          },
        };

        appd.pages.audit = {
          setUp() { document.getElementById("audit-refresh").addEventListener("click", () => this.load()); },
          enter() { this.load(); },
          async load() {
            let audit;
            try { audit = await request("GET", "/console/api/audit"); } catch (error) { notice("Audit log failed: " + error.message, true); return; }
            document.getElementById("audit-capacity").textContent = audit.capacity;
            fill(document.querySelector("#audit tbody"), audit.lines.map((line) => {
              const m = Object.assign({}, line.metadata);
              const method = m.method || "—", outcome = m.outcome || "—";
              const who = m["console.session"] ? "console " + m["console.session"] + " (uid " + m["peer.uid"] + ")" : (m["peer.uid"] || m.plugin || "—");
              for (const key of ["method", "outcome", "peer.uid", "console.session"]) delete m[key];
              return el("tr", {}, el("td", {}, line.time), el("td", {}, line.message), el("td", {}, method),
                el("td", { className: outcome === "ok" ? "yes" : outcome === "—" ? "" : "no" }, outcome), el("td", {}, who),
                el("td", { className: "payload" }, Object.keys(m).length ? JSON.stringify(m) : ""));
            }));
          },
        };

        """#
}
