// The cinder-attach console: plain DOM, no framework, no inline code. Every string that
// comes from the API or the user reaches the page as a text node (never as HTML), and
// every request goes to the public /v3 API with the signed-in user's token.
"use strict";

(() => {
  const SESSION_KEY = "cinder-attach.console.session";
  const REFRESH_MS = 3000;
  const MULTIATTACH = "<is> True";

  const state = {
    config: null,
    session: null,
    timer: null,
    dialog: null, // { element, refresh() } of the open dialog
    drawn: null, // what the screen shows, to draw it again only when it changed
  };

  const $ = (id) => document.getElementById(id);

  // An element with attributes and children; strings become text nodes.
  function h(tag, attributes, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
      else if (name === "class") element.className = value;
      else element.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      element.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return element;
  }

  // A table whose cells know their column's name (shown on small screens).
  function table(id, columns, rows, empty) {
    const body = h("tbody", {});
    if (rows.length === 0) {
      body.append(h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, empty)));
    }
    for (const row of rows) {
      const tr = h("tr", row.attributes || {});
      row.cells.forEach((cell, i) => {
        const label = columns[i];
        tr.append(h("td", { "data-label": label, class: label === "Actions" ? "actions" : null }, cell));
      });
      body.append(tr);
    }
    return h("table", { id }, h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))), body);
  }

  class CinderError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  // Cinder's fault body is {"<faultName>": {"code": ..., "message": ...}}.
  function faultMessage(response, data) {
    if (data && typeof data === "object") {
      for (const fault of Object.values(data)) {
        if (fault && typeof fault === "object" && typeof fault.message === "string") return fault.message;
      }
    }
    return `${response.status} ${response.statusText}`;
  }

  async function request(method, url, body, extraHeaders) {
    const headers = { Accept: "application/json", ...extraHeaders };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = null;
    }
    if (!response.ok) throw new CinderError(response.status, faultMessage(response, data));
    return data;
  }

  // A call to the volume API as the signed-in user.
  async function api(method, path, body) {
    const session = state.session;
    const url = `/v3/${encodeURIComponent(session.project_id)}${path}`;
    try {
      return await request(method, url, body, {
        "X-Auth-Token": session.token,
        "OpenStack-API-Version": `volume ${state.config.microversion}`,
      });
    } catch (error) {
      if (error.status === 401) signOut("Your session has ended; sign in again.");
      throw error;
    }
  }

  function notify(message) {
    const notice = $("notice");
    notice.textContent = message || "";
    notice.hidden = !message;
  }

  // ---- sign-in -------------------------------------------------------------------

  function signInView() {
    const error = h("p", { class: "error", role: "alert", hidden: true });
    const fields = [];
    const strategy = state.config.auth_strategy;
    if (strategy === "noauth") {
      fields.push(
        h("label", {}, "Token", h("input", { name: "token", id: "token", required: true, autocomplete: "off", placeholder: "user:project" })),
        h("p", { class: "hint" }, "This service runs with noauth: the token names you and your project, as user:project."),
      );
    } else if (strategy === "keystone") {
      fields.push(
        h("label", {}, "User name", h("input", { name: "username", id: "username", required: true, autocomplete: "username" })),
        h("label", {}, "Password", h("input", { name: "password", id: "password", type: "password", required: true, autocomplete: "current-password" })),
        h("label", {}, "Project", h("input", { name: "project", id: "project", required: true })),
        h("label", {}, "Domain", h("input", { name: "domain", id: "domain", value: "Default", required: true })),
      );
    } else {
      fields.push(h("p", {}, "This service trusts the identity headers of a proxy in front of it; sign in through that proxy."));
    }
    const form = h("form", { class: "stack", id: "sign-in" }, fields, error,
      strategy === "trusted-headers" ? null : h("button", { type: "submit", id: "sign-in-button" }, "Sign in"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const body = strategy === "noauth"
        ? { token: data.get("token") }
        : {
          username: data.get("username"), password: data.get("password"), project: data.get("project"),
          user_domain: data.get("domain"), project_domain: data.get("domain"),
        };
      try {
        const answer = await request("POST", "/console/session", body);
        state.session = answer.session;
        sessionStorage.setItem(SESSION_KEY, JSON.stringify(state.session));
        if (!location.hash || location.hash === "#/") location.hash = "#/volumes";
        showSignedIn();
        route();
      } catch (failure) {
        error.textContent = failure.message;
        error.hidden = false;
      }
    });
    return h("div", { class: "card" }, h("h1", {}, "Sign in"), form);
  }

  function signOut(message) {
    state.session = null;
    sessionStorage.removeItem(SESSION_KEY);
    closeDialog();
    stopRefresh();
    showSignedIn();
    $("main").replaceChildren(signInView());
    notify(message);
  }

  function showSignedIn() {
    const signedIn = Boolean(state.session);
    $("nav").hidden = !signedIn;
    $("sign-out").hidden = !signedIn;
    $("who").textContent = signedIn
      ? `${state.session.user_id} · project ${state.session.project_id}${state.session.is_admin ? " · admin" : ""}`
      : "";
  }

  // ---- data ----------------------------------------------------------------------

  const isShareableType = (type) => (type.extra_specs || {}).multiattach === MULTIATTACH;

  // A volume with `attachmentList`: every attachment of the attachment list (3.54: status
  // and mode), with the host the volume's own list gives for the attached ones.
  function withAttachments(volume, attachments) {
    const hosts = new Map(volume.attachments.map((a) => [a.attachment_id, a.host_name]));
    return { ...volume, attachmentList: attachments.map((a) => ({ ...a, host: hosts.get(a.id) || null })) };
  }

  async function loadVolumes() {
    const [volumes, attachments] = await Promise.all([
      api("GET", "/volumes/detail"),
      api("GET", "/attachments/detail"),
    ]);
    const byVolume = new Map();
    for (const attachment of attachments.attachments) {
      if (!byVolume.has(attachment.volume_id)) byVolume.set(attachment.volume_id, []);
      byVolume.get(attachment.volume_id).push(attachment);
    }
    return volumes.volumes.map((volume) => withAttachments(volume, byVolume.get(volume.id) || []));
  }

  async function loadVolume(id) {
    const [shown, attachments] = await Promise.all([
      api("GET", `/volumes/${encodeURIComponent(id)}`),
      api("GET", `/attachments/detail?volume_id=${encodeURIComponent(id)}`),
    ]);
    return withAttachments(shown.volume, attachments.attachments);
  }

  async function loadTypes() {
    return (await api("GET", "/types")).volume_types;
  }

  // ---- pieces --------------------------------------------------------------------

  const modeBadge = (mode) => h("span", { class: `mode mode-${mode || "rw"}` }, mode || "rw");
  const statusText = (status) => h("span", { class: `status status-${status}` }, status);
  const volumeName = (volume) => volume.name || volume.id;

  function attachedTo(volume) {
    if (volume.attachmentList.length === 0) return h("span", { class: "muted" }, "—");
    return h("ul", { class: "attached" }, volume.attachmentList.map((a) => h("li", { "data-attachment-id": a.id },
      a.instance || "(no server)",
      a.host ? ` on ${a.host}` : "",
      modeBadge(a.attach_mode),
      a.status === "attached" ? "" : h("span", { class: "muted" }, ` ${a.status}`),
    )));
  }

  async function act(button, work, errorTarget) {
    button.disabled = true;
    try {
      await work();
      if (errorTarget) errorTarget.hidden = true;
      notify("");
      await refresh();
    } catch (failure) {
      if (errorTarget) {
        errorTarget.textContent = failure.message;
        errorTarget.hidden = false;
      } else {
        notify(failure.message);
      }
    } finally {
      button.disabled = false;
    }
  }

  async function detach(attachment) {
    await api("DELETE", `/attachments/${encodeURIComponent(attachment.id)}`);
  }

  // ---- dialogs -------------------------------------------------------------------

  function openDialog(id, title, content, refreshContent) {
    closeDialog();
    const dialog = h("dialog", { id }, h("h2", {}, title), content);
    dialog.addEventListener("close", () => {
      dialog.remove();
      if (state.dialog && state.dialog.element === dialog) state.dialog = null;
    });
    document.body.append(dialog);
    state.dialog = { element: dialog, refresh: refreshContent || null };
    dialog.showModal();
    return dialog;
  }

  function closeDialog() {
    if (state.dialog) state.dialog.element.close();
  }

  async function createVolumeDialog() {
    const types = await loadTypes();
    const error = h("p", { class: "error", role: "alert", hidden: true });
    const typeSelect = h("select", { name: "volume_type", id: "volume-type" });
    const shareable = h("input", { type: "checkbox", name: "shareable", id: "shareable" });
    const typeHint = h("p", { class: "hint" });
    const fillTypes = () => {
      const offered = shareable.checked ? types.filter(isShareableType) : types;
      typeSelect.replaceChildren(
        ...(shareable.checked ? [] : [h("option", { value: "" }, "(default type)")]),
        ...offered.map((t) => h("option", { value: t.id }, t.name + (isShareableType(t) ? " (shareable)" : ""))),
      );
      typeHint.textContent = shareable.checked
        ? (offered.length ? "A shareable volume takes a volume type with multiattach=\"<is> True\"."
          : "No shareable volume type exists; an administrator can make one under Volume types.")
        : "";
    };
    shareable.addEventListener("change", fillTypes);
    fillTypes();
    const create = h("button", { type: "submit", id: "create-volume-submit" }, "Create");
    const form = h("form", { class: "stack" },
      h("label", {}, "Name", h("input", { name: "name", id: "volume-name", maxlength: 255 })),
      h("label", {}, "Size (GiB)", h("input", { name: "size", id: "volume-size", type: "number", min: 1, value: 1, required: true })),
      h("label", {}, "Description", h("input", { name: "description", id: "volume-description" })),
      h("label", { class: "check" }, shareable, "Shareable (can be attached to several servers at once)"),
      h("label", {}, "Volume type", typeSelect),
      typeHint,
      error,
      h("div", { class: "row" },
        h("button", { type: "button", class: "secondary", onclick: closeDialog }, "Cancel"),
        create),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const volume = { size: Number(data.get("size")), name: data.get("name") || null };
      if (data.get("description")) volume.description = data.get("description");
      if (data.get("volume_type")) volume.volume_type = data.get("volume_type");
      else if (shareable.checked) {
        error.textContent = "Choose a shareable volume type.";
        error.hidden = false;
        return;
      }
      act(create, async () => {
        await api("POST", "/volumes", { volume });
        closeDialog();
      }, error);
    });
    openDialog("create-volume-dialog", "Create volume", form);
  }

  function editAttachmentsDialog(volumeId) {
    const list = h("div", { id: "dialog-attachments" });
    const error = h("p", { class: "error", role: "alert", hidden: true });
    let drawn = null;
    const render = async () => {
      const volume = await loadVolume(volumeId);
      if (JSON.stringify(volume) === drawn) return;
      drawn = JSON.stringify(volume);
      const title = `${volumeName(volume)} — ${volume.multiattach ? "shareable" : "not shareable"}, ${volume.status}`;
      list.replaceChildren(h("p", { class: "hint" }, title), table("dialog-attachments-table",
        ["Server", "Host", "Mode", "Status", "Actions"],
        volume.attachmentList.map((a) => {
          const button = h("button", { type: "button", class: "danger" }, "Detach");
          button.addEventListener("click", () => act(button, () => detach(a), error));
          return { attributes: { "data-attachment-id": a.id }, cells: [a.instance || "—", a.host || "—", modeBadge(a.attach_mode), statusText(a.status), button] };
        }), "Not attached."));
    };
    const attach = h("button", { type: "submit", id: "attach-submit" }, "Attach");
    const form = h("form", { class: "stack", id: "attach-form" },
      h("div", { class: "grid3" },
        h("label", {}, "Instance ID", h("input", { name: "instance", id: "attach-instance", required: true, placeholder: "server UUID" })),
        h("label", {}, "Host", h("input", { name: "host", id: "attach-host", required: true, placeholder: "compute host" })),
        h("label", {}, "Mode", h("select", { name: "mode", id: "attach-mode" },
          h("option", { value: "rw" }, "read-write (rw)"), h("option", { value: "ro" }, "read-only (ro)")))),
      h("label", {}, "Initiator (iSCSI IQN, optional)", h("input", { name: "initiator", id: "attach-initiator" })),
      error,
      h("div", { class: "row" },
        h("button", { type: "button", class: "secondary", onclick: closeDialog }, "Close"),
        attach),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const connector = { host: data.get("host").trim() };
      if (data.get("initiator").trim()) connector.initiator = data.get("initiator").trim();
      act(attach, async () => {
        // What a compute service does: create the attachment with its connector, then
        // mark it complete once the volume is connected.
        const created = await api("POST", "/attachments", { attachment: {
          volume_uuid: volumeId, instance_uuid: data.get("instance").trim(), connector, mode: data.get("mode"),
        } });
        await api("POST", `/attachments/${encodeURIComponent(created.attachment.id)}/action`, { "os-complete": null });
        form.reset();
        await render();
      }, error);
    });
    openDialog("attachments-dialog", "Edit attachments", [list, h("h2", {}, "Attach to a server"), form], render);
    render().catch((failure) => {
      error.textContent = failure.message;
      error.hidden = false;
    });
  }

  // ---- screens -------------------------------------------------------------------

  function volumesView(volumes) {
    const rows = volumes.map((volume) => {
      const edit = h("button", { type: "button", class: "secondary", "data-action": "edit-attachments" }, "Edit attachments");
      edit.addEventListener("click", () => editAttachmentsDialog(volume.id));
      const remove = h("button", { type: "button", class: "danger", "data-action": "delete" }, "Delete");
      remove.addEventListener("click", () => {
        if (window.confirm(`Delete volume ${volumeName(volume)}?`)) {
          act(remove, () => api("DELETE", `/volumes/${encodeURIComponent(volume.id)}`));
        }
      });
      return {
        attributes: { "data-volume-id": volume.id },
        cells: [
          h("a", { href: `#/volumes/${encodeURIComponent(volume.id)}`, class: "volume-name" }, volumeName(volume)),
          `${volume.size} GiB`,
          statusText(volume.status),
          volume.volume_type || "—",
          volume.multiattach ? "Yes" : "No",
          attachedTo(volume),
          [edit, remove],
        ],
      };
    });
    const create = h("button", { type: "button", id: "create-volume" }, "Create volume");
    create.addEventListener("click", () => createVolumeDialog().catch((failure) => notify(failure.message)));
    return [
      h("div", { class: "toolbar" }, h("h1", {}, "Volumes"), create),
      table("volumes-table", ["Name", "Size", "Status", "Type", "Shareable", "Attached To", "Actions"], rows, "No volumes yet."),
    ];
  }

  function volumeView(volume) {
    const edit = h("button", { type: "button", id: "edit-attachments" }, "Edit attachments");
    edit.addEventListener("click", () => editAttachmentsDialog(volume.id));
    const facts = [
      ["ID", volume.id], ["Status", statusText(volume.status)], ["Size", `${volume.size} GiB`],
      ["Type", volume.volume_type || "—"], ["Shareable", volume.multiattach ? "Yes" : "No"],
      ["Bootable", volume.bootable], ["Description", volume.description || "—"],
      ["Created", volume.created_at], ["Attached To", attachedTo(volume)],
    ];
    const rows = volume.attachmentList.map((a) => {
      const button = h("button", { type: "button", class: "danger" }, "Detach");
      button.addEventListener("click", () => act(button, () => detach(a)));
      return {
        attributes: { "data-attachment-id": a.id },
        cells: [a.id, a.instance || "—", a.host || "—", modeBadge(a.attach_mode), statusText(a.status), a.attached_at || "—", button],
      };
    });
    return [
      h("p", {}, h("a", { href: "#/volumes" }, "← Volumes")),
      h("div", { class: "toolbar" }, h("h1", { id: "volume-title" }, volumeName(volume)), edit),
      h("dl", { class: "facts", id: "volume-facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      h("h2", {}, "Attachments"),
      table("attachments-table", ["Attachment", "Server", "Host", "Mode", "Status", "Attached", "Actions"], rows, "Not attached."),
    ];
  }

  function typesView(types) {
    const admin = state.session.is_admin;
    const rows = types.map((type) => {
      const specs = type.extra_specs || {};
      const actions = [];
      if (admin && !isShareableType(type)) {
        const share = h("button", { type: "button", class: "secondary", "data-action": "make-shareable" }, "Make shareable");
        share.addEventListener("click", () => act(share, () => api("POST",
          `/types/${encodeURIComponent(type.id)}/extra_specs`, { extra_specs: { multiattach: MULTIATTACH } })));
        actions.push(share);
      }
      return {
        attributes: { "data-type-id": type.id },
        cells: [type.name, type.description || "—", type.is_public === false ? "No" : "Yes",
          isShareableType(type) ? "Yes" : "No", specs["attach:max_attachments"] || "—",
          specs["attach:single_writer"] === MULTIATTACH ? "Yes" : "No", actions],
      };
    });
    const parts = [
      h("div", { class: "toolbar" }, h("h1", {}, "Volume types")),
      table("types-table", ["Name", "Description", "Public", "Shareable", "Max attachments", "Single writer", "Actions"], rows, "No volume types."),
    ];
    if (admin) parts.push(h("h2", {}, "Create a volume type"), createTypeForm());
    return parts;
  }

  function createTypeForm() {
    const error = h("p", { class: "error", role: "alert", hidden: true });
    const create = h("button", { type: "submit", id: "create-type-submit" }, "Create type");
    const form = h("form", { class: "stack card", id: "create-type" },
      h("label", {}, "Name", h("input", { name: "name", id: "type-name", required: true, maxlength: 255 })),
      h("label", {}, "Description", h("input", { name: "description", id: "type-description" })),
      h("label", { class: "check" }, h("input", { type: "checkbox", name: "multiattach", id: "type-multiattach" }), "Shareable (multiattach)"),
      h("label", {}, "Most attachments per volume (optional)", h("input", { name: "max", id: "type-max", type: "number", min: 1 })),
      h("label", { class: "check" }, h("input", { type: "checkbox", name: "single_writer", id: "type-single-writer" }), "Single writer (one rw attachment at a time)"),
      error, create);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const extraSpecs = {};
      if (data.get("multiattach")) extraSpecs.multiattach = MULTIATTACH;
      if (data.get("max")) extraSpecs["attach:max_attachments"] = String(data.get("max"));
      if (data.get("single_writer")) extraSpecs["attach:single_writer"] = MULTIATTACH;
      const volumeType = { name: data.get("name"), extra_specs: extraSpecs };
      if (data.get("description")) volumeType.description = data.get("description");
      act(create, async () => {
        await api("POST", "/types", { volume_type: volumeType });
        form.reset();
      }, error);
    });
    return form;
  }

  // ---- routing and refresh -------------------------------------------------------

  function currentScreen() {
    const hash = location.hash || "#/volumes";
    const volume = hash.match(/^#\/volumes\/([^/]+)$/);
    if (volume) return { nav: "nav-volumes", load: () => loadVolume(decodeURIComponent(volume[1])), view: volumeView };
    if (hash === "#/types") return { nav: "nav-types", load: loadTypes, view: typesView };
    return { nav: "nav-volumes", load: loadVolumes, view: volumesView };
  }

  // Loads the current screen's data and draws it again when it changed (so buttons stay
  // put between changes); a form being typed into is left alone.
  async function refresh() {
    if (!state.session) return;
    const main = $("main");
    const screen = currentScreen();
    for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("current", link.id === screen.nav);
    try {
      const data = await screen.load();
      const drawn = location.hash + JSON.stringify(data);
      const typing = main.contains(document.activeElement) && document.activeElement.matches("input, select, textarea");
      if (drawn !== state.drawn && !typing) {
        main.replaceChildren(...[screen.view(data)].flat());
        state.drawn = drawn;
      }
      if (state.dialog && state.dialog.refresh) await state.dialog.refresh();
    } catch (failure) {
      if (!state.session) return;
      notify(failure.message);
      // Nothing of this screen drawn yet: do not leave the previous one standing.
      if (state.drawn === null) main.replaceChildren(h("p", { class: "muted" }, "Nothing to show."));
    }
  }

  function stopRefresh() {
    if (state.timer) clearInterval(state.timer);
    state.timer = null;
  }

  function route() {
    stopRefresh();
    state.drawn = null;
    if (!state.session) {
      $("main").replaceChildren(signInView());
      return;
    }
    notify("");
    refresh();
    // Statuses change under the user (other clients, the compute side): poll.
    state.timer = setInterval(refresh, REFRESH_MS);
  }

  async function start() {
    $("sign-out").addEventListener("click", () => signOut(""));
    window.addEventListener("hashchange", route);
    try {
      state.config = (await request("GET", "/console/config")).console;
    } catch (failure) {
      $("main").replaceChildren(h("p", { class: "error" }, `The console cannot start: ${failure.message}`));
      return;
    }
    try {
      state.session = JSON.parse(sessionStorage.getItem(SESSION_KEY) || "null");
    } catch (_) {
      state.session = null;
    }
    showSignedIn();
    route();
  }

  document.addEventListener("DOMContentLoaded", start);
})();
