// SPDX-License-Identifier: Apache-2.0
import Bus
import HTTP

/// The OpenAPI 3.1 document of the HTTP API, generated from the served IDL: one operation per
/// routed method (request and reply schemas from the varlink types, the interface's errors
/// as error responses, bearer security where a session is needed, SSE for streams), the paths
/// plugins serve themselves as they describe them (`PluginHTTPRoute.openAPI`), and the
/// operational routes. Named types become `components/schemas/<Interface>.<Type>`.
struct OpenAPIDocument {
    let api: HTTPAPI

    func render() -> JSONValue {
        var paths: [String: JSONValue] = [:]
        var schemas: [String: JSONValue] = [
            "Error": [
                "type": "object", "required": ["error", "parameters"],
                "properties": ["error": ["type": "string", "description": "The varlink error's full name."], "parameters": ["type": "object"]],
            ]
        ]
        var tags: [JSONValue] = []
        for name in api.dispatcher.interfaceNames {
            guard let interface = api.dispatcher.interface(name) else { continue }
            let methods = interface.methods.filter { api.routes("\(name).\($0.name)") }
            guard !methods.isEmpty else { continue }
            tags.append(["name": .string(name), "description": .string(interface.doc)])
            for type in interface.types {
                schemas[Self.schemaName(name, type.name)] = schema(type.type, in: name)
            }
            for method in methods {
                paths["/v1/\(name)/\(method.name)"] = ["post": operation(method, in: interface)]
                if api.dispatcher.bus.methodInfo("\(name).\(method.name)")?.streaming == true {
                    schemas[Self.eventSchemaName("\(name).\(method.name)")] = eventSchema(structure(method.output, in: name))
                }
            }
        }
        for interfaceName in api.dispatcher.interfaceNames {
            guard let interface = api.dispatcher.interface(interfaceName) else { continue }
            for error in interface.errors {
                let full = "\(interfaceName).\(error.name)"
                schemas[OpenAPIErrors.schemaName(full)] = [
                    "type": "object", "required": ["error", "parameters"], "description": .string(error.doc),
                    "properties": ["error": ["const": .string(full)], "parameters": parameters(error.fields, in: interfaceName)],
                ]
            }
        }
        // What the plugins serve themselves (the files plugin's bytes); a method's path wins.
        paths.merge(api.pluginPaths) { method, _ in method }
        paths["/healthz"] = ["get": plain("health", "Alive: the process answers.", json: ["type": "object", "properties": ["status": ["type": "string"]]])]
        paths["/readyz"] = [
            "get": plain(
                "ready", "Ready: the database answers and the required plugins run (503 otherwise).",
                json: ["type": "object", "properties": ["status": ["type": "string"], "checks": ["type": "object", "additionalProperties": ["type": "string"]]]],
                extra: ["503": ["description": "Not ready", "content": ["application/json": ["schema": ["type": "object"]]]]])
        ]
        paths["/metrics"] = [
            "get": [
                "operationId": "metrics", "summary": "Prometheus metrics (text exposition format 0.0.4).", "tags": ["operations"],
                "responses": ["200": ["description": "Metrics", "content": ["text/plain": ["schema": ["type": "string"]]]]],
            ]
        ]
        return [
            "openapi": "3.1.0",
            "info": [
                "title": "appd", "version": .string(api.dispatcher.info.version),
                "description": "The app-facing API of appd: every method an app may call, derived from the served varlink interfaces.",
            ],
            "servers": [["url": "/"]],
            "tags": .array(tags + [["name": "operations"]]),
            "paths": .object(paths),
            "components": [
                "schemas": .object(schemas),
                "securitySchemes": [
                    "bearer": ["type": "http", "scheme": "bearer", "description": "The access token of a session (what signing in returns), sent as a bearer token."]
                ],
            ],
        ]
    }

    private func plain(_ id: String, _ summary: String, json: JSONValue, extra: [String: JSONValue] = [:]) -> JSONValue {
        var responses: [String: JSONValue] = ["200": ["description": "OK", "content": ["application/json": ["schema": json]]]]
        responses.merge(extra) { a, _ in a }
        return ["operationId": .string(id), "summary": .string(summary), "tags": ["operations"], "responses": .object(responses)]
    }

    private func operation(_ method: VarlinkMethod, in interface: VarlinkInterface) -> JSONValue {
        let full = "\(interface.name).\(method.name)"
        let info = api.dispatcher.bus.methodInfo(full)
        let streaming = info?.streaming == true
        let needsSession = info?.requirements.contains(where: { $0 == .session || $0 == .onboarded || $0 == .verifiedEmail }) == true
        let reply = structure(method.output, in: interface.name)
        var responses: [String: JSONValue] = [:]
        var content: [String: JSONValue] = [:]
        if !streaming || info?.answersPlainCalls == true { content["application/json"] = ["schema": reply] }
        if streaming {
            // OpenAPI 3.1 has no schema for the events of a stream (3.2's itemSchema): the
            // extension names a typed schema of them, one per method.
            content["text/event-stream"] = [
                "schema": ["type": "string"], "x-appd-event-schema": ["$ref": .string("#/components/schemas/\(Self.eventSchemaName(full))")],
            ]
        }
        responses["200"] = [
            "description": .string(
                streaming
                    ? "With Accept: text/event-stream, server-sent events: each reply as 'event: reply' with the reply object as JSON in 'data' (an error as 'event: error')."
                    : "The reply"),
            "content": .object(content),
        ]
        let idempotent = info?.requirements.contains(.idempotent) == true
        let conditional = method.input.contains { $0.name == "expectedVersion" }
        let errors = OpenAPIErrors(dispatcher: api.dispatcher)
        var statuses: Set<Int> = [400, 404, 500, 503, 504]
        if streaming && info?.answersPlainCalls != true { statuses.insert(406) }
        if api.routed(full)?.rateLimited == true { statuses.insert(429) }
        var raised: [Int: [String]] = [:]
        for name in errors.errors(of: full, in: interface, requirements: info?.requirements ?? [], idempotent: idempotent) {
            raised[APIErrorStatus.status(for: api.dispatcher.category(ofError: name)), default: []].append(name)
        }
        if conditional, let conflict = interface.errors.first(where: { $0.name == "Conflict" }) { raised[412] = ["\(interface.name).\(conflict.name)"] }
        statuses.formUnion(raised.keys)
        for status in statuses.sorted() {
            let names = raised[status] ?? []
            let description = names.isEmpty ? (HTTPResponse.reasons[status] ?? "Error") : names.joined(separator: ", ")
            // Each declared error with its typed parameters; the generic shape for what the API
            // itself answers (a route not found, a body too large).
            let schemas =
                names.map { JSONValue.object(["$ref": .string("#/components/schemas/" + OpenAPIErrors.schemaName($0))]) }
                + [["$ref": "#/components/schemas/Error"]]
            responses[String(status)] = ["description": .string(description), "content": ["application/json": ["schema": ["anyOf": .array(schemas)]]]]
        }
        var operation: [String: JSONValue] = [
            "operationId": .string(interface.name.replacing(".", with: "_") + "_" + method.name),
            "summary": .string(method.doc.split(separator: "\n").first.map(String.init) ?? full),
            "description": .string(method.doc),
            "tags": [.string(interface.name)],
            "requestBody": [
                "required": true, "content": ["application/json": ["schema": structure(method.input.filter { !$0.isFilledInByAppd }, in: interface.name)]],
            ],
            "responses": .object(responses),
        ]
        if needsSession { operation["security"] = [["bearer": []]] }
        var headers: [JSONValue] = []
        if idempotent {
            headers.append([
                "name": "Idempotency-Key", "in": "header", "required": false,
                "description": "A fresh UUID per write: sent again (a retry), the write has its effect once and the first outcome is returned. Kept 24 hours by default.",
                "schema": ["type": "string", "minLength": 1, "maxLength": .int(Int64(IdempotencyKey.maxLength)), "pattern": "^[!-~]+$"],
            ])
        }
        if conditional {
            headers.append([
                "name": "If-Match", "in": "header", "required": false,
                "description": "The ETag of the item as the client last saw it (its version, quoted): changed since, the call fails with 412 and the item as it stands.",
                "schema": ["type": "string", "pattern": "^\"[0-9]+\"$"],
            ])
        }
        if !headers.isEmpty { operation["parameters"] = .array(headers) }
        if full == "io.appd.Bus.Subscribe" {
            operation["parameters"] = [
                [
                    "name": "Last-Event-ID", "in": "header", "required": false, "description": "Resume after this event's sequence number ('since').",
                    "schema": ["type": "string", "pattern": "^[0-9]+$"],
                ]
            ]
        }
        return .object(operation)
    }

    static func schemaName(_ interface: String, _ type: String) -> String { "\(interface).\(type)" }

    static func eventSchemaName(_ method: String) -> String { "stream." + method }

    /// One server-sent event of a stream: a reply (`event: reply`, the reply as JSON in
    /// `data`) or its error (`event: error`).
    private func eventSchema(_ reply: JSONValue) -> JSONValue {
        [
            "oneOf": [
                ["type": "object", "required": ["event", "data"], "properties": ["event": ["const": "reply"], "data": reply]],
                ["type": "object", "required": ["event", "data"], "properties": ["event": ["const": "error"], "data": ["$ref": "#/components/schemas/Error"]]],
            ]
        ]
    }

    /// An error's parameters: its IDL fields (more may come: not closed).
    private func parameters(_ fields: [VarlinkField], in interface: String) -> JSONValue {
        guard case .object(var object) = structure(fields, in: interface) else { return ["type": "object"] }
        object["additionalProperties"] = nil
        return .object(object)
    }

    private func structure(_ fields: [VarlinkField], in interface: String) -> JSONValue {
        var properties: [String: JSONValue] = [:]
        var required: [JSONValue] = []
        for field in fields {
            var property = schema(field.type, in: interface)
            if !field.doc.isEmpty, case .object(var object) = property {
                object["description"] = .string(field.doc)
                property = .object(object)
            }
            properties[field.name] = property
            if !field.type.isOptional { required.append(.string(field.name)) }
        }
        var object: [String: JSONValue] = ["type": "object", "properties": .object(properties), "additionalProperties": false]
        if !required.isEmpty { object["required"] = .array(required) }
        return .object(object)
    }

    private func schema(_ type: VarlinkType, in interface: String) -> JSONValue {
        switch type {
        case .bool: ["type": "boolean"]
        case .int: ["type": "integer", "format": "int64"]
        case .float: ["type": "number"]
        case .string: ["type": "string"]
        case .object: ["type": "object"]
        case .optional(let inner):
            // 3.1: a union with null (JSON Schema 2020-12).
            ["anyOf": [schema(inner, in: interface), ["type": "null"]]]
        case .array(let element): ["type": "array", "items": schema(element, in: interface)]
        case .map(let value): ["type": "object", "additionalProperties": schema(value, in: interface)]
        case .named(let name): ["$ref": .string("#/components/schemas/\(Self.schemaName(interface, name))")]
        case .structure(let fields): structure(fields, in: interface)
        case .enumeration(let values): ["type": "string", "enum": .array(values.map(JSONValue.string))]
        }
    }
}
