// SPDX-License-Identifier: Apache-2.0
import BusCore
import HTTP

/// The files plugin's HTTP paths as OpenAPI 3.1 path items, joined to appd's `/openapi.json`
/// (`PluginHTTPRoute.openAPI`): single uploads, downloads (whole, ranged, conditional, by a
/// signed URL) and tus 1.0 uploads. The methods of `io.appd.Files` are there already, from the IDL.
enum FilesOpenAPI {
    static func paths(allowedTypes: [String]) -> [String: JSONValue] {
        let binary: JSONValue = ["type": "string", "format": "binary"]
        let fileReply: JSONValue = [
            "type": "object", "required": ["file"], "properties": ["file": ["$ref": "#/components/schemas/io.appd.Files.File"]],
        ]
        func json(_ description: String, _ schema: JSONValue) -> JSONValue {
            ["description": .string(description), "content": ["application/json": ["schema": schema]]]
        }
        func errors(_ statuses: [Int]) -> [String: JSONValue] {
            Dictionary(uniqueKeysWithValues: statuses.map { (String($0), json(Self.meaning[$0] ?? "Refused", ["$ref": "#/components/schemas/Error"])) })
        }
        func bare(_ statuses: [Int]) -> [String: JSONValue] {
            Dictionary(uniqueKeysWithValues: statuses.map { (String($0), JSONValue.object(["description": .string(Self.meaning[$0] ?? "Refused")])) })
        }
        func header(_ name: String, _ description: String, _ schema: JSONValue = ["type": "string"], required: Bool = false) -> JSONValue {
            ["name": .string(name), "in": "header", "required": .bool(required), "description": .string(description), "schema": schema]
        }
        func query(_ name: String, _ description: String, _ schema: JSONValue) -> JSONValue {
            ["name": .string(name), "in": "query", "required": false, "description": .string(description), "schema": schema]
        }
        let path: (String) -> JSONValue = { description in ["name": "id", "in": "path", "required": true, "description": .string(description), "schema": ["type": "string"]] }
        let bearer: JSONValue = [["bearer": []]]
        let tus = header("Tus-Resumable", "The tus version: 1.0.0.", ["type": "string", "enum": ["1.0.0"]], required: true)
        let offset: JSONValue = ["description": "How many bytes arrived", "schema": ["type": "string", "pattern": "^[0-9]+$"]]

        let downloadParameters: JSONValue = [
            path("The file's id (f_…)."),
            query("thumbnail", "The side of one of the file's thumbnails (File.thumbnails): that JPEG instead.", ["type": "integer"]),
            query("expires", "With sig: a signed URL's expiry (from SignURL), Unix seconds.", ["type": "integer"]),
            query("sig", "A signed URL's signature (from SignURL): no Authorization needed.", ["type": "string"]),
            header("Range", "One byte range (RFC 9110 §14): bytes=0-99, bytes=100-, bytes=-100."),
            header("If-None-Match", "ETags: 304 when one is the file's."),
            header("If-Range", "The ETag the Range is for; another version: the whole file."),
        ]
        var downloaded = bare([304, 416])
        downloaded["200"] = ["description": "The file (or the thumbnail)", "content": ["*/*": ["schema": binary]]]
        downloaded["206"] = ["description": "The range asked for", "content": ["*/*": ["schema": binary]]]
        downloaded.merge(errors([400, 401, 403, 404, 429, 503])) { a, _ in a }

        var uploaded = errors([400, 401, 403, 413, 415, 429, 503])
        uploaded["201"] = json("Stored", fileReply)
        uploaded["200"] = json("Stored before, by the same Idempotency-Key", fileReply)
        var content: [String: JSONValue] = [:]
        for type in allowedTypes { content[type] = ["schema": binary] }

        var created = errors([400, 401, 403, 412, 413, 429, 503])
        created["201"] = [
            "description": "Created: send the bytes with PATCH to Location",
            "headers": [
                "Location": ["description": "The upload's path", "schema": ["type": "string"]],
                "Upload-Expires": ["description": "When it is deleted unfinished", "schema": ["type": "string"]],
            ],
        ]
        var status = errors([401, 403, 404, 412, 415, 429, 503])
        status["200"] = [
            "description": "Where the upload is; Appd-File names the file once it is complete",
            "headers": ["Upload-Offset": offset, "Upload-Length": ["description": "Its length", "schema": ["type": "string", "pattern": "^[0-9]+$"]]],
        ]
        var appended = errors([400, 401, 403, 404, 409, 412, 413, 415, 429, 503])
        appended["204"] = ["description": "Written; Appd-File names the file once it is complete", "headers": ["Upload-Offset": offset]]
        var deleted = errors([401, 403, 404, 412, 429, 503])
        deleted["204"] = ["description": "Deleted, its bytes freed"]

        return [
            "/files": [
                "post": [
                    "operationId": "filesUpload", "tags": ["io.appd.Files"], "security": bearer,
                    "summary":
                        .string(
                            "Stores a file (the body): its type is read from the bytes and must match Content-Type and the allowed types; images are bounded in pixels, "
                                + "stripped of metadata and get thumbnails."),
                    "parameters": [
                        query("name", "The file's name (sanitised).", ["type": "string"]),
                        header("Idempotency-Key", "A retry with the same key answers the file stored the first time (200)."),
                    ],
                    "requestBody": ["required": true, "content": .object(content)],
                    "responses": .object(uploaded),
                ]
            ],
            "/files/{id}": [
                "get": [
                    "operationId": "filesDownload", "tags": ["io.appd.Files"], "security": [["bearer": []], [:]],
                    "summary": "A file's bytes, to its owner (bearer) or by a signed URL (expires and sig, no Authorization): ranges, ETags, nosniff; not an image: an attachment.",
                    "parameters": downloadParameters, "responses": .object(downloaded),
                ],
                "head": [
                    "operationId": "filesDownloadHead", "tags": ["io.appd.Files"], "security": [["bearer": []], [:]],
                    "summary": "What GET would answer, without the bytes.", "parameters": downloadParameters,
                    "responses": .object(bare([200, 206, 304, 400, 401, 403, 404, 416, 429, 503])),
                ],
            ],
            "/files/uploads": [
                "post": [
                    "operationId": "filesTusCreate", "tags": ["io.appd.Files"], "security": bearer,
                    "summary": "tus 1.0 creation: a resumable upload of Upload-Length bytes (Upload-Metadata: filename, filetype).",
                    "parameters": [
                        tus, header("Upload-Length", "The file's size in bytes.", ["type": "string", "pattern": "^[0-9]{1,19}$"], required: true),
                        header("Upload-Metadata", "Comma-separated key and base64 value pairs: filename, filetype."),
                    ],
                    "responses": .object(created),
                ],
                "options": [
                    "operationId": "filesTusOptions", "tags": ["io.appd.Files"], "summary": "tus 1.0 discovery: the version, extensions and the largest upload.",
                    "responses": [
                        "204": [
                            "description": "What the server offers",
                            "headers": [
                                "Tus-Version": ["schema": ["type": "string"]], "Tus-Extension": ["schema": ["type": "string"]], "Tus-Max-Size": ["schema": ["type": "string"]],
                            ],
                        ]
                    ],
                ],
            ],
            "/files/uploads/{id}": [
                "head": [
                    "operationId": "filesTusStatus", "tags": ["io.appd.Files"], "security": bearer, "summary": "tus 1.0: how much of the upload arrived.",
                    "parameters": [path("The upload's id (u_…), from Location."), tus], "responses": .object(bare(Array(status.keys.compactMap { Int($0) }))),
                ],
                "patch": [
                    "operationId": "filesTusAppend", "tags": ["io.appd.Files"], "security": bearer,
                    "summary": "tus 1.0: the next bytes, at Upload-Offset (where HEAD says the upload is); the last ones make the file.",
                    "parameters": [
                        path("The upload's id (u_…)."), tus, header("Upload-Offset", "Where these bytes start.", ["type": "string", "pattern": "^[0-9]{1,19}$"], required: true),
                    ],
                    "requestBody": ["required": true, "content": ["application/offset+octet-stream": ["schema": binary]]],
                    "responses": .object(appended),
                ],
                "delete": [
                    "operationId": "filesTusDelete", "tags": ["io.appd.Files"], "security": bearer, "summary": "tus 1.0 termination: the upload ends, its bytes are freed.",
                    "parameters": [path("The upload's id (u_…)."), tus], "responses": .object(deleted),
                ],
            ],
        ]
    }

    /// What a browser app needs for downloads (ranges, validators) and tus uploads.
    static let crossOrigin = CrossOriginNeeds(
        methods: ["HEAD", "PATCH", "DELETE"],
        requestHeaders: ["Range", "If-None-Match", "If-Range", "Tus-Resumable", "Upload-Length", "Upload-Offset", "Upload-Metadata"],
        exposedHeaders: [
            "Location", "Upload-Offset", "Upload-Length", "Upload-Expires", "Tus-Resumable", "Tus-Version", "Tus-Extension", "Tus-Max-Size", "Appd-File",
            "Content-Range", "Content-Disposition", "Accept-Ranges",
        ])

    static let meaning: [Int: String] = [
        200: "OK", 206: "Partial content", 304: "Not modified", 400: "Invalid (ValidationFailed)", 401: "Not signed in",
        403: "Refused: another's, over the quota, a bad signature", 404: "No such file or upload", 409: "Conflict: the offset, or the upload is busy",
        412: "Tus-Resumable is not 1.0.0", 413: "Larger than filesMaxMB", 415: "Not a type appd stores, or not the type declared",
        416: "The range is past the end", 429: "Too many requests", 503: "Storage unavailable: try again",
    ]
}
