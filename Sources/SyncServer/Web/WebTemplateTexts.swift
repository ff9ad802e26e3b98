/// The web page's Mustache templates. `{{name}}` is HTML-escaped (`& < > " '`); the templates
/// use no triple braces, so nothing a user named can become markup. Every page shares `top` and
/// `bottom`; its context has `title`, `css`, `js`, and when signed in `user` and `csrf`.
enum WebTemplateTexts {
    static let all: [String: String] = [
        "top": top, "bottom": bottom, "signin": signIn, "containers": containers, "folder": folder, "file": file,
        "sessions": sessions, "failure": failure, "trash": trash, "admin": admin, "shared": shared,
        "sealed": sealed,
    ]

    static let top = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · SyncFS</title>
        <link rel="stylesheet" href="{{css}}">
        <script src="{{js}}" defer></script>
        </head>
        <body>
        <a class="skip" href="#main">Skip to the content</a>
        <header class="bar">
        <a class="brand" href="/">SyncFS</a>
        {{#user}}
        <nav aria-label="Account">
        <a href="/sessions">Account</a>
        <span class="who" title="Signed in as">{{user}}</span>
        <form method="post" action="/logout" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit">Sign out</button>
        </form>
        </nav>
        {{/user}}
        </header>
        <main id="main">
        """

    static let bottom = """
        </main>
        </body>
        </html>
        """

    static let signIn = """
        {{> top}}
        <h1>Sign in</h1>
        {{#message}}<p class="error" role="alert" id="signin-error">{{message}}</p>{{/message}}
        <form method="post" action="/login" class="stack" id="signin">
        <input type="hidden" name="csrf" value="{{token}}">
        <label for="user">User name</label>
        <input id="user" name="user" autocomplete="username" autocapitalize="none" required value="{{name}}">
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required>
        <label for="totp">Code from your authenticator app (if you set one up)</label>
        <input id="totp" name="totp" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}">
        <button type="submit">Sign in</button>
        </form>
        {{> bottom}}
        """

    static let containers = """
        {{> top}}
        <h1>Containers</h1>
        {{^rows}}<p>You are not a member of any container yet. An admin adds you with
        <code>syncfs-mount user role</code>.</p>{{/rows}}
        {{#hasRows}}
        <table class="list" id="containers">
        <thead><tr><th scope="col">Name</th><th scope="col">Your role</th><th scope="col" class="num">Size</th>
        <th scope="col" class="num">Stored</th><th scope="col">Quota</th><th scope="col">Content</th></tr></thead>
        <tbody>
        {{#rows}}
        <tr><td><a href="{{href}}">{{name}}</a></td><td>{{role}}</td><td class="num">{{size}}{{^size}}—{{/size}}</td>
        <td class="num">{{stored}}{{^stored}}—{{/stored}}</td><td>{{quota}}</td><td>{{note}}</td></tr>
        {{/rows}}
        </tbody>
        </table>
        {{/hasRows}}
        {{> bottom}}
        """

    static let crumbs = """
        <nav aria-label="Breadcrumbs" class="crumbs"><ol>
        {{#crumbs}}<li>{{#href}}<a href="{{href}}">{{name}}</a>{{/href}}{{^href}}<span aria-current="page">{{name}}</span>{{/href}}</li>{{/crumbs}}
        </ol></nav>
        """

    static let folder = """
        {{> top}}
        \(crumbs)
        <h1>{{heading}}</h1>
        <div class="tools">
        <form method="get" action="{{here}}" class="filter" role="search">
        {{#path}}<input type="hidden" name="path" value="{{path}}">{{/path}}
        <input type="hidden" name="sort" value="{{sort}}">
        <input type="hidden" name="order" value="{{order}}">
        <label for="filter">Filter names</label>
        <input id="filter" name="filter" value="{{filter}}" type="search">
        <button type="submit">Filter</button>
        </form>
        <a class="button" href="{{zip}}" id="zip">Download as zip</a>
        <a class="button" href="{{trashPage}}" id="trash-link">Trash</a>
        {{#adminPage}}<a class="button" href="{{adminPage}}" id="admin-link">Members, links, audit</a>{{/adminPage}}
        </div>
        {{#canWrite}}
        <section class="changes" aria-label="Add to this folder">
        <form method="post" action="{{mkdir}}" class="filter">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="path" value="{{pathText}}">
        <label for="new-folder">New folder</label>
        <input id="new-folder" name="name" required maxlength="255">
        <button type="submit">Create</button>
        </form>
        <div id="upload" class="upload" data-container="{{container}}" data-folder="{{pathText}}" data-csrf="{{csrf}}">
        <label for="upload-files">Upload files (or drop them here)</label>
        <input id="upload-files" type="file" multiple>
        <ul id="upload-progress" aria-live="polite"></ul>
        </div>
        </section>
        {{/canWrite}}
        {{#changes}}\(changes){{/changes}}
        <p class="count" id="count">{{summary}}</p>
        <table class="list" id="entries">
        <thead><tr>
        <th scope="col" aria-sort="{{nameSort}}"><a href="{{byName}}">Name</a></th>
        <th scope="col" aria-sort="{{sizeSort}}" class="num"><a href="{{bySize}}">Size</a></th>
        <th scope="col" aria-sort="{{timeSort}}"><a href="{{byTime}}">Modified</a></th>
        </tr></thead>
        <tbody>
        {{#rows}}
        <tr class="{{kind}}"><td>{{#href}}<a href="{{href}}">{{/href}}<span class="kind" role="img" aria-label="{{kind}}"></span><span class="name">{{name}}</span>{{#href}}</a>{{/href}}</td>
        <td class="num"{{#bytes}} title="{{bytes}} bytes"{{/bytes}}>{{size}}</td><td><time datetime="{{iso}}">{{modified}}</time></td></tr>
        {{/rows}}
        </tbody>
        </table>
        <nav aria-label="Pages" class="pages">
        {{#previous}}<a href="{{previous}}" rel="prev">Previous page</a>{{/previous}}
        {{#next}}<a href="{{next}}" rel="next">Next page</a>{{/next}}
        </nav>
        {{> bottom}}
        """

    static let file = """
        {{> top}}
        \(crumbs)
        <h1>{{heading}}</h1>
        <dl class="facts">
        <dt>Size</dt><dd title="{{bytes}} bytes">{{size}}</dd>
        <dt>Modified</dt><dd><time datetime="{{iso}}">{{modified}}</time></dd>
        </dl>
        {{#download}}<p><a class="button" href="{{download}}" id="download">Download</a></p>{{/download}}
        {{#changes}}\(changes){{/changes}}
        {{#text}}<h2>Preview</h2><pre class="preview" id="preview-text">{{text}}</pre>{{#cut}}<p>The preview shows the beginning of the file.</p>{{/cut}}{{/text}}
        {{#image}}<h2>Preview</h2><img class="preview" id="preview-image" src="{{image}}" alt="{{heading}}">{{/image}}
        {{#pdf}}<h2>Preview</h2><iframe class="preview" id="preview-pdf" src="{{pdf}}" title="{{heading}}"></iframe>{{/pdf}}
        {{#noPreview}}<p>No preview for this kind of file.</p>{{/noPreview}}
        {{#hasVersions}}
        <h2>Versions</h2>
        <table class="list" id="versions">
        <thead><tr><th scope="col">Saved</th><th scope="col" class="num">Size</th><th scope="col">By</th>
        <th scope="col"><span class="hidden">Actions</span></th></tr></thead>
        <tbody>
        {{#versions}}
        <tr><td><time datetime="{{iso}}">{{saved}}</time>{{#current}} (this version){{/current}}</td>
        <td class="num">{{size}}</td><td>{{device}}</td>
        <td>{{#download}}<a href="{{download}}">Download</a>{{/download}}
        {{#restore}}<form method="post" action="{{restore}}" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="path" value="{{path}}">
        <input type="hidden" name="version" value="{{version}}">
        <button type="submit" aria-label="Restore the version of {{saved}}">Restore</button></form>{{/restore}}</td></tr>
        {{/versions}}
        </tbody>
        </table>
        {{/hasVersions}}
        {{> bottom}}
        """

    /// Rename, move and delete forms for the entry at `path` (an editor's).
    static let changes = """
        <details class="changes" id="changes"><summary>Rename, move or delete</summary>
        <form method="post" action="{{rename}}" class="filter">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="path" value="{{path}}">
        <label for="rename-name">New name</label>
        <input id="rename-name" name="name" required maxlength="255" value="{{name}}">
        <button type="submit">Rename</button>
        </form>
        <form method="post" action="{{move}}" class="filter">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="path" value="{{path}}">
        <label for="move-to">Move into the folder (its path; empty for the top)</label>
        <input id="move-to" name="to" value="{{parent}}">
        <button type="submit">Move</button>
        </form>
        <form method="post" action="{{delete}}" class="filter" data-confirm="Delete {{name}}? It stays in the trash.">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="path" value="{{path}}">
        <button type="submit" class="danger" id="delete">Delete</button>
        </form>
        </details>
        """

    static let sessions = """
        {{> top}}
        <h1>Your account</h1>
        <h2 id="sessions-heading">Signed-in browsers</h2>
        <table class="list" id="sessions" aria-labelledby="sessions-heading">
        <thead><tr><th scope="col">Browser</th><th scope="col">Address</th><th scope="col">Signed in</th>
        <th scope="col">Last seen</th><th scope="col">State</th><th scope="col"><span class="hidden">Action</span></th></tr></thead>
        <tbody>
        {{#rows}}
        <tr><td>{{agent}}</td><td>{{address}}</td><td>{{created}}</td><td>{{lastSeen}}</td><td>{{state}}</td>
        <td>{{#revocable}}<form method="post" action="/sessions/revoke" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="id" value="{{id}}">
        <button type="submit" aria-label="Sign out {{agent}} ({{id}})">Sign out</button></form>{{/revocable}}</td></tr>
        {{/rows}}
        </tbody>
        </table>
        <h2 id="devices-heading">Devices</h2>
        {{^devices}}<p>No machine has signed in with <code>syncfs-mount login</code> yet.</p>{{/devices}}
        <table class="list" id="devices" aria-labelledby="devices-heading">
        <thead><tr><th scope="col">Device</th><th scope="col">Since</th><th scope="col">Last seen</th>
        <th scope="col">State</th><th scope="col"><span class="hidden">Action</span></th></tr></thead>
        <tbody>
        {{#devices}}
        <tr><td>{{name}} ({{id}})</td><td>{{created}}</td><td>{{lastSeen}}</td><td>{{state}}</td>
        <td>{{#revocable}}<form method="post" action="/devices/revoke" class="inline" data-confirm="Stop {{name}} from syncing?">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="id" value="{{id}}">
        <button type="submit" aria-label="Revoke {{name}} ({{id}})">Revoke</button></form>{{/revocable}}</td></tr>
        {{/devices}}
        </tbody>
        </table>
        <h2 id="tokens-heading">Tokens</h2>
        <table class="list" id="tokens" aria-labelledby="tokens-heading">
        <thead><tr><th scope="col">Token</th><th scope="col">Opens</th><th scope="col">Role</th><th scope="col">Expires</th>
        <th scope="col">Last used</th><th scope="col">State</th><th scope="col"><span class="hidden">Action</span></th></tr></thead>
        <tbody>
        {{#tokens}}
        <tr><td>{{id}} {{label}}</td><td>{{containers}}</td><td>{{role}}</td><td>{{expires}}</td><td>{{lastUsed}}</td><td>{{state}}</td>
        <td>{{#revocable}}<form method="post" action="/tokens/revoke" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="id" value="{{id}}">
        <button type="submit" aria-label="Revoke token {{id}}">Revoke</button></form>{{/revocable}}</td></tr>
        {{/tokens}}
        </tbody>
        </table>
        {{> bottom}}
        """

    static let trash = """
        {{> top}}
        \(crumbs)
        <h1>Trash</h1>
        <p>Deleted files and folders, newest first. They stay here as long as the container keeps
        its history (its retention).</p>
        {{^hasRows}}<p id="empty">The trash is empty.</p>{{/hasRows}}
        {{#hasRows}}
        <table class="list" id="deleted">
        <thead><tr><th scope="col">Name</th><th scope="col">Was in</th><th scope="col">Deleted</th>
        <th scope="col" class="num">Size</th><th scope="col"><span class="hidden">Action</span></th></tr></thead>
        <tbody>
        {{#rows}}
        <tr><td><span class="name">{{name}}</span></td><td>{{folder}}</td><td><time datetime="{{iso}}">{{deleted}}</time></td>
        <td class="num">{{size}}</td>
        <td>{{#restore}}<form method="post" action="{{restore}}" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="id" value="{{id}}">
        <input type="hidden" name="version" value="{{version}}">
        <button type="submit" aria-label="Restore {{name}}">Restore</button></form>{{/restore}}</td></tr>
        {{/rows}}
        </tbody>
        </table>
        {{/hasRows}}
        <nav aria-label="Pages" class="pages">{{#older}}<a href="{{older}}" rel="next">Older</a>{{/older}}</nav>
        {{> bottom}}
        """

    static let admin = """
        {{> top}}
        \(crumbs)
        <h1>Run {{container}}</h1>
        {{#created}}<p class="notice" role="status" id="new-link">The new link (shown only now):
        <a href="{{created}}" id="new-link-address">{{created}}</a> (its full address is this server's
        followed by this path)</p>{{/created}}
        <h2 id="storage-heading">Storage</h2>
        {{#storage}}
        <dl class="facts" id="storage" aria-labelledby="storage-heading">
        <dt>Files and folders</dt><dd>{{live}}</dd>
        <dt>Their size</dt><dd>{{logical}}</dd>
        <dt>Stored (compressed, deduplicated, with history)</dt><dd>{{stored}}</dd>
        <dt>Quota</dt><dd>{{quota}}</dd>
        <dt>In the trash</dt><dd>{{trashed}}</dd>
        <dt>Older versions kept</dt><dd>{{versions}}</dd>
        </dl>
        {{/storage}}
        {{^storage}}<p>This container keeps no storage accounting.</p>{{/storage}}
        <h2 id="members-heading">Members</h2>
        <table class="list" id="members" aria-labelledby="members-heading">
        <thead><tr><th scope="col">User</th><th scope="col">Role</th><th scope="col"><span class="hidden">Actions</span></th></tr></thead>
        <tbody>
        {{#members}}
        <tr><td>{{user}}</td><td>{{role}}</td><td>
        <form method="post" action="{{setMember}}" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="user" value="{{user}}">
        <label class="hidden" for="role-{{user}}">Role of {{user}}</label>
        <select id="role-{{user}}" name="role">{{#roles}}<option value="{{value}}"{{#chosen}} selected{{/chosen}}>{{value}}</option>{{/roles}}</select>
        <button type="submit">Change</button></form>
        <form method="post" action="{{removeMember}}" class="inline" data-confirm="Remove {{user}} from the container?">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="user" value="{{user}}">
        <button type="submit" class="danger" aria-label="Remove {{user}}">Remove</button></form>
        </td></tr>
        {{/members}}
        </tbody>
        </table>
        <form method="post" action="{{setMember}}" class="filter" id="add-member">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="new-member">Add a user</label><input id="new-member" name="user" required maxlength="64">
        <label for="new-role">as</label>
        <select id="new-role" name="role"><option>viewer</option><option selected>editor</option><option>admin</option></select>
        <button type="submit">Add</button>
        </form>
        <h2 id="links-heading">Share links</h2>
        <table class="list" id="links" aria-labelledby="links-heading">
        <thead><tr><th scope="col">Link</th><th scope="col">Kind</th><th scope="col">Opens</th><th scope="col">Expires</th>
        <th scope="col">Downloads</th><th scope="col">State</th><th scope="col"><span class="hidden">Action</span></th></tr></thead>
        <tbody>
        {{#links}}
        <tr><td>{{id}} {{label}}</td><td>{{kind}}</td><td>{{prefix}}</td><td>{{expires}}</td><td>{{downloads}}</td><td>{{state}}</td>
        <td>{{#live}}<form method="post" action="{{revokeLink}}" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="id" value="{{id}}">
        <button type="submit" aria-label="Revoke link {{id}}">Revoke</button></form>{{/live}}</td></tr>
        {{/links}}
        </tbody>
        </table>
        <form method="post" action="{{createLink}}" class="stack" id="create-link">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="link-path">Path it opens (empty for the whole container)</label><input id="link-path" name="path">
        <label for="link-kind">Kind</label>
        <select id="link-kind" name="kind"><option value="view">view a folder or file</option>
        <option value="download">download one file</option><option value="upload-only">upload only (a drop box)</option></select>
        <label for="link-password">Password (optional)</label><input id="link-password" name="password" type="password" autocomplete="new-password">
        <label for="link-days">Expires after (days)</label><input id="link-days" name="days" inputmode="numeric" value="30">
        <label for="link-max">Most downloads (optional)</label><input id="link-max" name="max" inputmode="numeric">
        <label for="link-label">Label (optional)</label><input id="link-label" name="label" maxlength="200">
        <button type="submit">Create the link</button>
        </form>
        <h2 id="audit-heading">Audit log (the newest {{auditCount}} lines of the last 7 days)</h2>
        <table class="list" id="audit" aria-labelledby="audit-heading">
        <thead><tr><th scope="col">Time</th><th scope="col">Who</th><th scope="col">From</th><th scope="col">What</th>
        <th scope="col">On</th><th scope="col">Result</th></tr></thead>
        <tbody>
        {{#audit}}<tr><td>{{time}}</td><td>{{actor}}</td><td>{{address}}</td><td>{{action}}</td><td>{{target}}</td><td>{{result}}</td></tr>{{/audit}}
        </tbody>
        </table>
        {{> bottom}}
        """

    /// A share link's public page: a folder, a file, or a drop box, for people without an account.
    static let shared = """
        {{> top}}
        {{#hasCrumbs}}<nav aria-label="Breadcrumbs" class="crumbs"><ol>
        {{#crumbs}}<li>{{#href}}<a href="{{href}}">{{name}}</a>{{/href}}{{^href}}<span aria-current="page">{{name}}</span>{{/href}}</li>{{/crumbs}}
        </ol></nav>{{/hasCrumbs}}
        <h1>{{heading}}</h1>
        <p class="count" id="shared-note">{{note}}</p>
        {{#listing}}
        <table class="list" id="entries">
        <thead><tr><th scope="col">Name</th><th scope="col" class="num">Size</th><th scope="col">Modified</th></tr></thead>
        <tbody>
        {{#rows}}
        <tr class="{{kind}}"><td>{{#href}}<a href="{{href}}">{{/href}}<span class="kind" role="img" aria-label="{{kind}}"></span><span class="name">{{name}}</span>{{#href}}</a>{{/href}}</td>
        <td class="num">{{size}}</td><td><time datetime="{{iso}}">{{modified}}</time></td></tr>
        {{/rows}}
        </tbody>
        </table>
        {{#next}}<nav aria-label="Pages" class="pages"><a href="{{next}}" rel="next">More</a></nav>{{/next}}
        {{/listing}}
        {{#download}}<p><a class="button" href="{{download}}" id="download">Download ({{size}})</a></p>{{/download}}
        {{#dropBox}}
        <div id="dropbox" class="upload" data-url="{{dropBox}}">
        <label for="drop-files">Files to send (or drop them here)</label>
        <input id="drop-files" type="file" multiple>
        <ul id="drop-progress" aria-live="polite"></ul>
        </div>
        <p>What you send is added to the folder; you cannot see what is there.</p>
        {{/dropBox}}
        {{> bottom}}
        """

    /// A sealed container: the browser opens it (`WebSealedScript`); the key field has no `name`,
    /// so no submission of the form, even without the script, can carry it.
    static let sealed = """
        {{> top}}
        <nav class="crumbs" aria-label="Folders"><ol id="sealed-crumbs">
        <li><a href="/">Containers</a></li><li><span aria-current="page">{{container}}</span></li>
        </ol></nav>
        <h1 id="sealed-heading">{{container}}</h1>
        <div id="sealed" data-container="{{container}}" data-entries="{{entries}}" data-chunk="{{chunk}}">
        <div class="notice" id="sealed-notice">
        <p>This container is encrypted by its devices: the server holds only sealed bytes and cannot show
        them. To browse it here, type its recovery key. This page opens the container in your browser (read
        only); the key is never sent, and it is forgotten when you leave the page.</p>
        <p><strong>Only on a server you trust to send this page unchanged.</strong> The page's script comes
        from the server: a server changed to send another script could take the key, and a recovery key
        cannot be changed. Where that matters, use one of your devices instead.</p>
        </div>
        <noscript><p class="error">Opening an encrypted container needs JavaScript: the key must stay in
        this browser.</p></noscript>
        <form id="sealed-open" class="stack" autocomplete="off">
        <label for="recovery-key">Recovery key (SFR1-…)</label>
        <input id="recovery-key" type="text" autocomplete="off" autocapitalize="characters" spellcheck="false"
         required>
        <button type="submit">Open in this browser</button>
        </form>
        <p id="sealed-status" role="status"></p>
        <p id="sealed-error" class="error" role="alert" hidden></p>
        <p id="sealed-summary" class="count" hidden></p>
        <table class="list" id="sealed-list" hidden>
        <caption class="hidden">Files and folders</caption>
        <thead><tr><th scope="col">Name</th><th scope="col" class="num">Size</th><th scope="col">Changed</th></tr></thead>
        <tbody></tbody>
        </table>
        </div>
        <script src="{{sealedJS}}" defer></script>
        {{> bottom}}
        """

    static let failure = """
        {{> top}}
        <h1>{{heading}}</h1>
        <p class="error" role="alert" id="failure">{{message}}</p>
        <p><a href="/">Back to your containers</a></p>
        {{> bottom}}
        """
}
