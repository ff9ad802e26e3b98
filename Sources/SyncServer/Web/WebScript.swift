/// The page's script: enhancements only (every page works without it) and the uploader, which
/// needs it. No inline script anywhere: the CSP allows this file only.
enum WebScript {
    static let text = """
        "use strict";
        (() => {
          const PIECE = \(WebUpload.pieceBytes);
          const ASK = \(WebUpload.maximumHashes);

          document.addEventListener("DOMContentLoaded", () => {
            // A sign-in form that came back with an error: the password again.
            if (document.getElementById("signin-error")) {
              const field = document.getElementById("password");
              if (field) field.focus();
            }
            // Forms that ask first (a delete).
            for (const form of document.querySelectorAll("form[data-confirm]")) {
              form.addEventListener("submit", (event) => {
                if (!window.confirm(form.dataset.confirm)) event.preventDefault();
              });
            }
            const box = document.getElementById("upload");
            if (box) uploader(box);
            const drop = document.getElementById("dropbox");
            if (drop) dropBox(drop);
          });

          // A share link's drop box: each file in one POST to the link's upload endpoint.
          function dropBox(box) {
            const input = document.getElementById("drop-files");
            const list = document.getElementById("drop-progress");
            async function send(files) {
              for (const file of files) {
                const line = document.createElement("li");
                line.textContent = `${file.name}: sending`;
                list.appendChild(line);
                try {
                  const response = await fetch(`${box.dataset.url}?name=${encodeURIComponent(file.name)}`,
                    { method: "POST", body: file, credentials: "same-origin" });
                  if (!response.ok) {
                    let message = `refused (${response.status})`;
                    try { message = (await response.json()).message || message; } catch (error) {}
                    throw new Error(message);
                  }
                  line.textContent = `${file.name}: sent`;
                  line.classList.add("done");
                } catch (error) {
                  line.textContent = `${file.name}: not sent: ${error.message}`;
                  line.classList.add("failed");
                }
              }
            }
            input.addEventListener("change", () => send([...input.files]));
            box.addEventListener("dragover", (event) => { event.preventDefault(); box.classList.add("over"); });
            box.addEventListener("dragleave", () => box.classList.remove("over"));
            box.addEventListener("drop", (event) => {
              event.preventDefault();
              box.classList.remove("over");
              send([...event.dataTransfer.files]);
            });
          }

          function hex(buffer) {
            return [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
          }

          const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

          // A request, retried while the network or the server is away: a dropped connection,
          // 408, 429 and 5xx are retried (with Retry-After or a growing wait); other refusals end
          // the upload with the server's words.
          async function send(url, options, csrf, note) {
            let wait = 500;
            for (let attempt = 1; ; attempt++) {
              let response;
              try {
                response = await fetch(url, { ...options, credentials: "same-origin",
                  headers: { ...(options.headers || {}), "X-SyncFS-CSRF": csrf } });
              } catch (error) {
                response = null;
              }
              if (response && response.ok) return response;
              if (response && ![408, 429, 500, 502, 503, 504].includes(response.status)) {
                let message = `the server refused it (${response.status})`;
                try { message = (await response.json()).message || message; } catch (error) {}
                throw new Error(message);
              }
              if (attempt >= 60) throw new Error("the server could not be reached");
              const after = response && Number(response.headers.get("Retry-After"));
              note(`connection lost, retrying (attempt ${attempt + 1})`);
              await pause(after ? after * 1000 : wait);
              wait = Math.min(wait * 2, 10000);
            }
          }

          async function uploadFile(box, file, line) {
            const base = "/c/" + encodeURIComponent(box.dataset.container);
            const csrf = box.dataset.csrf;
            const note = (text) => { line.textContent = `${file.name}: ${text}`; };
            if (!window.crypto || !crypto.subtle) throw new Error("uploads need HTTPS (WebCrypto)");
            const pieces = [];
            for (let start = 0; start < file.size; start += PIECE) {
              const end = Math.min(start + PIECE, file.size);
              const digest = await crypto.subtle.digest("SHA-256", await file.slice(start, end).arrayBuffer());
              pieces.push({ start, end, hash: hex(digest) });
              note(`reading ${Math.round((end / file.size) * 100)} %`);
            }
            let done = 0;
            for (let first = 0; first < pieces.length; first += ASK) {
              const group = pieces.slice(first, first + ASK);
              const asked = await send(base + "/missing", { method: "POST",
                headers: { "Content-Type": "application/json" },
                body: JSON.stringify({ hashes: group.map((p) => p.hash) }) }, csrf, note);
              const missing = new Set((await asked.json()).missing);
              for (const piece of group) {
                if (missing.has(piece.hash)) {
                  await send(`${base}/chunk?hash=${piece.hash}`, { method: "PUT",
                    body: file.slice(piece.start, piece.end) }, csrf, note);
                  missing.delete(piece.hash);
                }
                done += piece.end - piece.start;
                note(`uploading ${Math.round((done / Math.max(file.size, 1)) * 100)} %`);
              }
            }
            await send(base + "/commit", { method: "POST", headers: { "Content-Type": "application/json" },
              body: JSON.stringify({ folder: box.dataset.folder, name: file.name, modified: file.lastModified,
                chunks: pieces.map((p) => ({ hash: p.hash, length: p.end - p.start })) }) }, csrf, note);
            note("uploaded");
            line.classList.add("done");
          }

          function uploader(box) {
            const input = document.getElementById("upload-files");
            const list = document.getElementById("upload-progress");
            let running = 0;
            async function start(files) {
              for (const file of files) {
                const line = document.createElement("li");
                line.textContent = `${file.name}: waiting`;
                list.appendChild(line);
                running++;
                try {
                  await uploadFile(box, file, line);
                } catch (error) {
                  line.textContent = `${file.name}: not uploaded: ${error.message}`;
                  line.classList.add("failed");
                }
                running--;
              }
              if (running === 0 && !list.querySelector(".failed")) {
                box.dataset.finished = "yes";
                window.location.reload();
              }
            }
            input.addEventListener("change", () => start([...input.files]));
            box.addEventListener("dragover", (event) => { event.preventDefault(); box.classList.add("over"); });
            box.addEventListener("dragleave", () => box.classList.remove("over"));
            box.addEventListener("drop", (event) => {
              event.preventDefault();
              box.classList.remove("over");
              start([...event.dataTransfer.files]);
            });
          }
        })();
        """
}
