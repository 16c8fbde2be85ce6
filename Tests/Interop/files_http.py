#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Stored files with the real appd over HTTP: a real photo made by Pillow (EXIF with GPS, the
camera's make and an orientation) uploaded with POST /files, then downloaded with curl — whole,
as a range, resumed with `curl -C -` after a cut — and decoded by Pillow: the same pixels' size,
the orientation kept, GPS and make gone. Another account gets 404, a signed URL opens the file
without a token until it is tampered with, an upload over filesMaxMB is refused by the server
before its body is read, HTML declared as HTML is refused, and deleting the account removes the
bytes from disk. Resumable: a real tus client (tuspy) sends a photo in chunks, a PATCH is cut
mid-body on the wire, a new client resumes from the offset HEAD gives, and the file it becomes
decodes.

Usage: files_http.py APPD_BINARY
"""
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from PIL import Image
from tusclient import client as tus

from harness import call, check, finish, free_port, http_request, post, wait_for

PASSWORD = "correct horse battery"


def curl(*args):
    return subprocess.run(["curl", "-s", "-S", *args], capture_output=True, timeout=60)


def photo():
    return photo_of(1200, 800)


def photo_of(width, height):
    image = Image.new("RGB", (width, height))
    image.putdata([((x * 7) % 256, (y * 3) % 256, (x * y) % 256) for y in range(height) for x in range(width)])
    exif = Image.Exif()
    exif[0x0112] = 6
    exif[0x010F] = "ACME Camera Co"
    gps = exif.get_ifd(0x8825)
    gps[1], gps[2], gps[3], gps[4] = "N", (52.0, 31.0, 12.0), "E", (13.0, 24.0, 18.0)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90, exif=exif.tobytes())
    return out.getvalue()


def start(appd, data, sock, port):
    proc = subprocess.Popen([appd, "--socket", sock, "--data-dir", data, "--http-listen", f"127.0.0.1:{port}", "--files-max-mb", "60",
                             "--files-quota-mb", "200", "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: os.path.exists(sock) and "error" not in call(sock, "io.appd.Daemon.Ping", timeout=2), timeout=30)
    return proc


def resumable_through_cuts_and_a_crash(appd, procs, data, sock, port, token):
    """Sends 50 MB with tuspy in 1 MiB chunks; ten times a PATCH is cut on the wire at a random
    point, and once appd is killed (SIGKILL) and started again; each time a new client resumes
    from HEAD. `procs`: the appd processes started, the one running last (each one started is
    added). Returns whether the stored file is the bytes sent."""
    import random
    procs[-1].terminate()
    procs[-1].wait(timeout=15)
    procs.append(start(appd, data, sock, port))  # with room for 50 MB
    payload = b"%PDF-1.7\n" + os.urandom(50 * 1000 * 1000)
    endpoint = f"http://127.0.0.1:{port}/files/uploads"
    headers = {"Authorization": f"Bearer {token}"}
    uploader = tus.TusClient(endpoint, headers=headers).uploader(
        file_stream=io.BytesIO(payload), chunk_size=1 << 20, metadata={"filename": "big.pdf", "filetype": "application/pdf"})
    url = uploader.create_url()
    path = url.split(f":{port}", 1)[1]
    offset = lambda: int(http_request(port, "HEAD", path, headers={**headers, "Tus-Resumable": "1.0.0"})[1].get("Upload-Offset", -1))
    rng = random.Random(61)
    for cut in range(11):
        # A few chunks by a fresh client resuming from HEAD, then a cut or the crash.
        client = tus.TusClient(endpoint, headers=headers).uploader(file_stream=io.BytesIO(payload), url=url, chunk_size=1 << 20)
        for _ in range(rng.randint(1, 3)):
            if client.offset < len(payload):
                client.upload_chunk()
        if cut == 5:
            procs[-1].kill()
            procs[-1].wait(timeout=15)
            os.unlink(sock)  # a killed appd leaves its socket file
            procs.append(start(appd, data, sock, port))
            continue
        at = offset()
        wire = socket.create_connection(("127.0.0.1", port))
        wire.sendall((f"PATCH {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nTus-Resumable: 1.0.0\r\n"
                      f"Content-Type: application/offset+octet-stream\r\nUpload-Offset: {at}\r\nContent-Length: {1 << 20}\r\n\r\n").encode()
                     + payload[at:at + rng.randint(1, (1 << 20) - 1)])
        wire.close()
    tus.TusClient(endpoint, headers=headers).uploader(file_stream=io.BytesIO(payload), url=url, chunk_size=1 << 20).upload()
    done = http_request(port, "HEAD", path, headers={**headers, "Tus-Resumable": "1.0.0"})
    file_path = done[1].get("Appd-File", "")
    stored = http_request(port, "GET", file_path, headers=headers) if file_path else (0, {}, b"")
    same = stored[0] == 200 and hashlib.sha256(stored[2]).digest() == hashlib.sha256(payload).digest()
    if file_path:
        call(sock, "io.appd.Files.Delete", {"id": file_path.rsplit("/", 1)[1]}, token=token)
    return same


def appctl_put_resume_get_rm(appd, sock, root, email):
    """appctl files put/ls/get/rm against the real daemon: an upload interrupted after its
    first piece (made with the bus methods, as an interrupted put leaves it) is finished by
    `appctl files put --resume`; get writes the same bytes; rm deletes it."""
    import base64
    appctl = os.path.join(os.path.dirname(os.path.abspath(appd)), "appctl")
    env = {**os.environ, "XDG_CONFIG_HOME": os.path.join(root, "appctl-config")}
    run = lambda *args, stdin=None: subprocess.run([appctl, "--socket", sock, *args], input=stdin, capture_output=True, env=env, timeout=60)
    login = run("login", email, "--password-stdin", stdin=PASSWORD.encode())
    check("appctl logs in", login.returncode == 0, login.stderr.decode()[:300])
    token = call(sock, "io.appd.Auth.SignIn", {"email": email, "password": PASSWORD})["parameters"]["session"]["accessToken"]
    payload = b"%PDF-1.7\n" + os.urandom(1_500_000)
    path = os.path.join(root, "report.pdf")
    with open(path, "wb") as f:
        f.write(payload)
    created = call(sock, "io.appd.Files.CreateUpload", {"bytes": len(payload), "name": "report.pdf", "contentType": "application/pdf"}, token=token)
    upload = created.get("parameters", {}).get("uploadId", "u_missing")
    first = call(sock, "io.appd.Files.AppendUpload", {"uploadId": upload, "offset": 0, "data": base64.b64encode(payload[:400_000]).decode()}, token=token)
    check("a first piece goes up over the socket", first.get("parameters", {}).get("offset") == 400_000, str(first)[:300])
    again = call(sock, "io.appd.Files.AppendUpload", {"uploadId": upload, "offset": 0, "data": base64.b64encode(payload[:10]).decode()}, token=token)
    check("a piece at the wrong offset is OffsetMismatch with where the upload is",
          again.get("error") == "io.appd.Files.OffsetMismatch" and again.get("parameters", {}).get("offset") == 400_000, str(again)[:300])
    put = run("files", "put", path, "--resume", upload, "--json")
    stored = json.loads(put.stdout or b"{}")
    check("appctl files put --resume finishes it from where the daemon says", put.returncode == 0 and stored.get("bytes") == len(payload)
          and stored.get("sha256") == hashlib.sha256(payload).hexdigest(), (put.stdout + put.stderr).decode()[:300])
    listed = run("files", "ls", "--json")
    check("appctl files ls lists it", stored.get("id", "f_missing") in listed.stdout.decode(), listed.stdout.decode()[:300])
    out = os.path.join(root, "back.pdf")
    got = run("files", "get", stored.get("id", "f_missing"), "--output", out)
    check("appctl files get writes the same bytes", got.returncode == 0 and open(out, "rb").read() == payload if os.path.exists(out) else False,
          got.stderr.decode()[:300])
    plain = run("files", "put", path)
    second = plain.stdout.decode().split()[0] if plain.returncode == 0 and plain.stdout else "f_missing"
    check("appctl files put uploads a file in one go", plain.returncode == 0 and second.startswith("f_"), (plain.stdout + plain.stderr).decode()[:300])
    removed = [run("files", "rm", stored.get("id", "f_missing")), run("files", "rm", second)]
    check("appctl files rm deletes them", all(r.returncode == 0 for r in removed) and stored.get("id", "f_missing") not in run("files", "ls", "--json").stdout.decode(),
          str([r.stderr for r in removed]))


def main():
    appd = sys.argv[1]
    root = tempfile.mkdtemp(prefix="appd-files-")
    sock, port = os.path.join(root, "appd.sock"), free_port()
    data = os.path.join(root, "data")
    procs = [subprocess.Popen([appd, "--socket", sock, "--data-dir", data, "--http-listen", f"127.0.0.1:{port}", "--files-max-mb", "2", "--log-level", "warning",
                              "--http-allowed-origins", "https://app.example.com"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        wait_for(lambda: os.path.exists(sock) and "error" not in call(sock, "io.appd.Daemon.Ping", timeout=2))
        tokens = {}
        for email in ["ada@example.com", "bob@example.com"]:
            call(sock, "io.appd.Auth.SignUp", {"email": email, "password": PASSWORD})
            tokens[email] = call(sock, "io.appd.Auth.SignIn", {"email": email, "password": PASSWORD})["parameters"]["session"]["accessToken"]
        ada, bob = tokens["ada@example.com"], tokens["bob@example.com"]
        original = photo()
        status, headers, body = http_request(port, "POST", "/files?name=IMG_0001.jpg", original,
                                        {"Authorization": f"Bearer {ada}", "Content-Type": "image/jpeg", "Idempotency-Key": "upload-1"})
        reply = json.loads(body or b"{}")
        check("a photo is stored: 201, its id, size and type read from the bytes", status == 201
              and reply.get("file", {}).get("width") == 1200 and reply["file"].get("height") == 800 and reply["file"].get("contentType") == "image/jpeg",
              f"{status} {body[:300]}")
        file_id = reply.get("file", {}).get("id", "f_missing")
        again = http_request(port, "POST", "/files?name=IMG_0001.jpg", original,
                        {"Authorization": f"Bearer {ada}", "Content-Type": "image/jpeg", "Idempotency-Key": "upload-1"})
        check("the same upload retried with its key is the same file (200)", again[0] == 200 and json.loads(again[2])["file"]["id"] == file_id, str(again[:2]))

        target = os.path.join(root, "got.jpg")
        got = curl("-o", target, "-w", "%{http_code}", "-H", f"Authorization: Bearer {ada}", f"http://127.0.0.1:{port}/files/{file_id}")
        downloaded = open(target, "rb").read() if os.path.exists(target) else b""
        check("curl downloads it", got.stdout == b"200" and len(downloaded) == reply["file"]["bytes"], f"{got.stdout} {got.stderr[:200]}")
        image = Image.open(io.BytesIO(downloaded))
        image.load()
        exif = dict(image.getexif())
        check("Pillow decodes every pixel of it, the size unchanged", image.size == (1200, 800))
        check("the orientation is kept, GPS and the camera's make are gone", exif == {0x0112: 6} and b"ACME" not in downloaded, str(exif))
        ranged = curl("-r", "0-99", "-H", f"Authorization: Bearer {ada}", f"http://127.0.0.1:{port}/files/{file_id}")
        check("a range is those bytes", ranged.stdout == downloaded[:100], f"{len(ranged.stdout)} bytes")
        partial = os.path.join(root, "partial.jpg")
        with open(partial, "wb") as f:
            f.write(downloaded[:1234])
        resumed = curl("-C", "-", "-o", partial, "-H", f"Authorization: Bearer {ada}", f"http://127.0.0.1:{port}/files/{file_id}")
        check("curl -C - resumes a cut download to the same bytes", resumed.returncode == 0 and open(partial, "rb").read() == downloaded, resumed.stderr[:200])
        head = http_request(port, "HEAD", f"/files/{file_id}", headers={"Authorization": f"Bearer {ada}"})
        check("HEAD says the length and sends no body", head[0] == 200 and head[1].get("Content-Length") == str(len(downloaded)) and head[2] == b"", str(head[:2]))
        check("the download may not be sniffed into something else", head[1].get("X-Content-Type-Options") == "nosniff")
        check("another account gets 404, no token 401",
              http_request(port, "GET", f"/files/{file_id}", headers={"Authorization": f"Bearer {bob}"})[0] == 404
              and http_request(port, "GET", f"/files/{file_id}")[0] == 401)

        check("thumbnails of 256 and 1024 were made", reply["file"].get("thumbnails") == [256, 1024], str(reply["file"]))
        thumb = http_request(port, "GET", f"/files/{file_id}?thumbnail=256", headers={"Authorization": f"Bearer {ada}"})
        small = Image.open(io.BytesIO(thumb[2]))
        small.load()
        check("Pillow decodes the 256 thumbnail: 256×170, upright by its orientation", thumb[0] == 200 and small.size == (256, 170)
              and dict(small.getexif()) == {0x0112: 6}, f"{thumb[:2]} {small.size} {dict(small.getexif())}")
        drawing = Image.new("RGBA", (600, 400), (0, 0, 0, 0))
        drawing.putdata([(x % 256, y % 256, 200, (x + y) % 256) for y in range(400) for x in range(600)])
        png = io.BytesIO()
        drawing.save(png, "PNG")
        status, _, body = http_request(port, "POST", "/files?name=drawing.png", png.getvalue(), {"Authorization": f"Bearer {ada}", "Content-Type": "image/png"})
        png_file = json.loads(body).get("file", {}) if status == 201 else {}
        png_thumb = http_request(port, "GET", f"/files/{png_file.get('id', 'f_missing')}?thumbnail=256", headers={"Authorization": f"Bearer {ada}"})
        decoded_png = Image.open(io.BytesIO(png_thumb[2])) if png_thumb[0] == 200 else None
        check("a transparent PNG gets a JPEG thumbnail over white", png_file.get("thumbnails") == [256] and decoded_png is not None
              and decoded_png.format == "JPEG" and decoded_png.size == (256, 170), f"{status} {png_file}")
        call(sock, "io.appd.Files.Delete", {"id": png_file.get("id", "f_missing")}, token=ada)

        signed = call(sock, "io.appd.Files.SignURL", {"id": file_id, "seconds": 120}, token=ada)["parameters"]
        opened = http_request(port, "GET", signed["path"])
        check("a signed URL opens it without a token", opened[0] == 200 and opened[2] == downloaded, str(opened[:2]))
        tampered = signed["path"].replace("expires=", "expires=9")
        check("a tampered one does not", http_request(port, "GET", tampered)[0] == 403)

        big = b"\xff\xd8\xff" + os.urandom(3 * 1024 * 1024)
        refused = http_request(port, "POST", "/files", big, {"Authorization": f"Bearer {ada}", "Content-Type": "image/jpeg"})
        check("an upload over filesMaxMB is refused (413)", refused[0] == 413, str(refused[:2]))
        html = http_request(port, "POST", "/files?name=x.html", b"<html><script>alert(1)</script></html>",
                       {"Authorization": f"Bearer {ada}", "Content-Type": "text/html"})
        check("HTML is not a file type appd stores (415)", html[0] == 415, str(html))

        # Resumable: bob's photo in 64 KiB chunks with tuspy, a cut PATCH, a resumption.
        big_photo = photo_of(900, 900)
        endpoint = f"http://127.0.0.1:{port}/files/uploads"
        first = tus.TusClient(endpoint, headers={"Authorization": f"Bearer {bob}"}).uploader(
            file_stream=io.BytesIO(big_photo), chunk_size=64 * 1024, metadata={"filename": "big.jpg", "filetype": "image/jpeg"})
        first.upload_chunk()
        first.upload_chunk()
        upload_path = first.url.split(f":{port}", 1)[1]
        offset = lambda: int(http_request(port, "HEAD", upload_path, headers={"Authorization": f"Bearer {bob}", "Tus-Resumable": "1.0.0"})[1].get("Upload-Offset", -1))
        check("tuspy created the upload and sent two chunks", offset() == 2 * 64 * 1024, str(offset()))
        preflight = http_request(port, "OPTIONS", upload_path, headers={"Origin": "https://app.example.com", "Access-Control-Request-Method": "PATCH",
                                                                      "Access-Control-Request-Headers": "upload-offset, tus-resumable"})
        allowed = lambda name: [v.strip().lower() for v in preflight[1].get(name, "").split(",")]
        check("a browser on an allowed origin may PATCH with the tus headers (CORS preflight)", preflight[0] == 204 and "patch" in allowed("Access-Control-Allow-Methods")
              and {"upload-offset", "tus-resumable", "upload-length", "upload-metadata"} <= set(allowed("Access-Control-Allow-Headers")), str(preflight[:2]))
        seen = http_request(port, "HEAD", upload_path, headers={"Authorization": f"Bearer {bob}", "Tus-Resumable": "1.0.0", "Origin": "https://app.example.com"})
        exposed = [v.strip().lower() for v in seen[1].get("Access-Control-Expose-Headers", "").split(",")]
        check("and may read Upload-Offset and Location", {"upload-offset", "location", "appd-file"} <= set(exposed), str(seen[1]))
        cut = socket.create_connection(("127.0.0.1", port))
        cut.sendall((f"PATCH {upload_path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {bob}\r\nTus-Resumable: 1.0.0\r\n"
                     f"Content-Type: application/offset+octet-stream\r\nUpload-Offset: {offset()}\r\nContent-Length: 50000\r\n\r\n").encode()
                    + big_photo[offset():offset() + 20000])
        cut.close()
        check("a PATCH cut mid-body leaves the upload where it was", wait_for(lambda: offset() == 2 * 64 * 1024), str(offset()))
        resumed = tus.TusClient(endpoint, headers={"Authorization": f"Bearer {bob}"}).uploader(
            file_stream=io.BytesIO(big_photo), url=first.url, chunk_size=64 * 1024)
        check("a new client resumes from the offset HEAD gives", resumed.offset == 2 * 64 * 1024, str(resumed.offset))
        resumed.upload()
        done = http_request(port, "HEAD", upload_path, headers={"Authorization": f"Bearer {bob}", "Tus-Resumable": "1.0.0"})
        file_path = done[1].get("Appd-File", "")
        check("the complete upload is a file, named by Appd-File", done[0] == 200 and file_path.startswith("/files/f_"), str(done[:2]))
        fetched = http_request(port, "GET", file_path, headers={"Authorization": f"Bearer {bob}"})
        decoded = Image.open(io.BytesIO(fetched[2]))
        decoded.load()
        check("and it decodes: 900×900, its GPS stripped", fetched[0] == 200 and decoded.size == (900, 900) and dict(decoded.getexif()) == {0x0112: 6}, str(fetched[:2]))

        # 50 MB resumably through ten cuts at random points and a kill -9 of appd: the same bytes.
        upload_ok = resumable_through_cuts_and_a_crash(appd, procs, data, sock, port, bob)
        check("50 MB through ten cut connections and a kill -9 of appd: the stored file's SHA-256 is the sent bytes'", upload_ok, str(upload_ok))

        appctl_put_resume_get_rm(appd, sock, root, "bob@example.com")

        # ada's photo as her profile picture: shown by WhoAmI, kept while it is.
        status, set_reply = post(port, "io.appd.Auth.SetAvatar", {"fileId": file_id}, token=ada)
        check("SetAvatar over HTTP makes the photo ada's avatar", status == 200 and set_reply.get("user", {}).get("avatarFileId") == file_id, f"{status} {set_reply}")
        status, refused = post(port, "io.appd.Files.Delete", {"id": file_id}, token=ada)
        check("the avatar's file cannot be deleted on its own (409 InUse)", status == 409 and refused.get("error") == "io.appd.Files.InUse", f"{status} {refused}")

        status, usage = post(port, "io.appd.Files.Usage", {}, token=ada)
        check("the account's usage counts the stored bytes", status == 200 and usage == {"files": 1, "bytes": len(downloaded), "quotaBytes": 200 << 20}, str(usage))
        blobs = os.path.join(data, "plugin-data", "files")
        stored = lambda: sorted(f for _, _, files in os.walk(blobs) for f in files if f.startswith("f_"))
        check("ada's and bob's files' bytes (and thumbnails) are on disk, no partial upload left",
              len([f for f in stored() if ".t" not in f]) == 2 and not os.listdir(os.path.join(blobs, ".incoming")), str(stored()))
        call(sock, "io.appd.Auth.DeleteAccount", {"password": PASSWORD}, token=ada)
        bobs = file_path.rsplit("/", 1)[1]
        check("deleting ada's account removes hers and their thumbnails, bob's stay", wait_for(lambda: stored() == [bobs, bobs + ".t256"]), str(stored()))
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(root, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
