#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Stored files in S3-compatible storage, against a real S3-speaking server (moto's server
mode, from PyPI): appd signs every request with AWS Signature V4, a small file goes up in one
PUT, a large one as a multipart upload (CreateMultipartUpload, UploadPart ×3, Complete), both
land in the bucket byte for byte as boto3 reads them, come back through appd, and go from the
bucket when deleted. With a PostgreSQL URL, two appd instances share the database and the
bucket: a file uploaded on one is listed, downloaded and opened by a signed URL on the other.
A wrong secret is the store's refusal, never a stored file.

Usage: files_s3.py APPD_BINARY [POSTGRES_URL]
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import boto3
from botocore.exceptions import ClientError

from harness import call, check, database_env, finish, free_port, http_request, wait_for

PASSWORD = "correct horse battery"


def main():
    appd = sys.argv[1]
    database = sys.argv[2] if len(sys.argv) > 2 else None
    root = tempfile.mkdtemp(prefix="appd-files-s3-")
    s3_port = free_port()
    # Signatures checked: after the first three calls (an IAM user, its policy, its key) moto
    # verifies every request's Signature V4 against the keys it issued.
    moto = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(s3_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3"))
    procs = []
    try:
        endpoint = f"http://127.0.0.1:{s3_port}"
        wait_for(lambda: _listening(s3_port), timeout=30)
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
        iam.create_user(UserName="appd")
        iam.put_user_policy(UserName="appd", PolicyName="files", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="appd")["AccessKey"]
        key_id, key_secret = key["AccessKeyId"], key["SecretAccessKey"]
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=key_id, aws_secret_access_key=key_secret)
        s3.create_bucket(Bucket="appd-files")
        secret = os.path.join(root, "s3-secret")
        with open(secret, "w") as f:
            f.write(key_secret + "\n")
        url_key = os.path.join(root, "url-key")
        with open(url_key, "wb") as f:
            f.write(os.urandom(32))
        env = dict(os.environ, **database_env(database, "files_s3"))
        instances = []
        for name in (["a", "b"] if database else ["a"]):
            sock, port = os.path.join(root, f"{name}.sock"), free_port()
            procs.append(subprocess.Popen(
                [appd, "--socket", sock, "--data-dir", os.path.join(root, name), "--http-listen", f"127.0.0.1:{port}", "--log-level", "warning",
                 "--files-max-mb", "20", "--files-url-key-file", url_key, "--files-s3-endpoint", endpoint, "--files-s3-bucket", "appd-files",
                 "--files-s3-access-key-id", key_id, "--files-s3-secret-key-file", secret, "--files-s3-prefix", "appd/", "--files-s3-part-mb", "5"],
                env=env, stderr=subprocess.DEVNULL))
            instances.append((sock, port))
        for sock, _ in instances:
            wait_for(lambda: os.path.exists(sock) and "error" not in call(sock, "io.appd.Daemon.Ping", timeout=2), timeout=60)
        sock, port = instances[0]
        call(sock, "io.appd.Auth.SignUp", {"email": "ada@example.com", "password": PASSWORD})
        token = call(sock, "io.appd.Auth.SignIn", {"email": "ada@example.com", "password": PASSWORD})["parameters"]["session"]["accessToken"]
        auth = {"Authorization": f"Bearer {token}"}

        small = b"%PDF-1.7\n" + os.urandom(50_000)
        status, _, body = http_request(port, "POST", "/files?name=small.pdf", small, {**auth, "Content-Type": "application/pdf"})
        small_id = json.loads(body).get("file", {}).get("id", "f_missing") if status == 201 else "f_missing"
        check("a small file is stored (201)", status == 201, f"{status} {body[:300]}")
        stored = s3.get_object(Bucket="appd-files", Key=f"appd/files/{small_id}")
        check("it is one object in the bucket, byte for byte", stored["Body"].read() == small)

        large = b"%PDF-1.7\n" + os.urandom(12 * 1024 * 1024)
        status, _, body = http_request(port, "POST", "/files?name=large.pdf", large, {**auth, "Content-Type": "application/pdf"})
        large_id = json.loads(body).get("file", {}).get("id", "f_missing") if status == 201 else "f_missing"
        check("a 12 MiB file is stored (201)", status == 201, f"{status} {body[:300]}")
        head = s3.head_object(Bucket="appd-files", Key=f"appd/files/{large_id}")
        check("it went up in three parts (a multipart ETag)", head["ETag"].strip('"').endswith("-3") and head["ContentLength"] == len(large), str(head.get("ETag")))
        got = http_request(port, "GET", f"/files/{large_id}", headers=auth)
        check("appd gives it back from the bucket", got[0] == 200 and hashlib.sha256(got[2]).digest() == hashlib.sha256(large).digest(), str(got[:2]))
        ranged = http_request(port, "GET", f"/files/{large_id}", headers={**auth, "Range": "bytes=100-199"})
        check("and a range of it", ranged[0] == 206 and ranged[2] == large[100:200])

        if len(instances) > 1:
            other_sock, other_port = instances[1]
            listed = call(other_sock, "io.appd.Files.List", {}, token=token)["parameters"]["files"]
            check("the other instance lists both files", sorted(f["id"] for f in listed) == sorted([small_id, large_id]), str(listed)[:300])
            there = http_request(other_port, "GET", f"/files/{small_id}", headers=auth)
            check("and serves one uploaded on the first", there[0] == 200 and there[2] == small, str(there[:2]))
            signed = call(sock, "io.appd.Files.SignURL", {"id": small_id}, token=token)["parameters"]["path"]
            check("a URL signed on the first opens on the second", http_request(other_port, "GET", signed)[0] == 200)

        call(sock, "io.appd.Files.Delete", {"id": large_id}, token=token)
        try:
            s3.head_object(Bucket="appd-files", Key=f"appd/files/{large_id}")
            gone = False
        except ClientError:
            gone = True
        check("deleting it removes the object", gone)

        # A wrong secret: the store refuses, and appd stores nothing.
        with open(secret, "w") as f:
            f.write("not-the-secret\n")
        wrong_port = free_port()
        wrong_sock = os.path.join(root, "wrong.sock")
        procs.append(subprocess.Popen(
            [appd, "--socket", wrong_sock, "--data-dir", os.path.join(root, "wrong"), "--http-listen", f"127.0.0.1:{wrong_port}", "--log-level", "warning",
             "--files-s3-endpoint", endpoint, "--files-s3-bucket", "appd-files", "--files-s3-access-key-id", key_id, "--files-s3-secret-key-file", secret],
            stderr=subprocess.DEVNULL))
        wait_for(lambda: os.path.exists(wrong_sock) and "error" not in call(wrong_sock, "io.appd.Daemon.Ping", timeout=2), timeout=60)
        call(wrong_sock, "io.appd.Auth.SignUp", {"email": "eve@example.com", "password": PASSWORD})
        eve = call(wrong_sock, "io.appd.Auth.SignIn", {"email": "eve@example.com", "password": PASSWORD})["parameters"]["session"]["accessToken"]
        refused = http_request(wrong_port, "POST", "/files", small, {"Authorization": f"Bearer {eve}", "Content-Type": "application/pdf"})
        usage = call(wrong_sock, "io.appd.Files.Usage", {}, token=eve)["parameters"]
        check("a wrong secret: the upload fails (503), nothing is recorded", refused[0] == 503 and usage["files"] == 0, f"{refused[:2]} {usage}")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        moto.terminate()
        moto.wait(timeout=15)
        shutil.rmtree(root, ignore_errors=True)
    finish()


def _listening(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


if __name__ == "__main__":
    main()
