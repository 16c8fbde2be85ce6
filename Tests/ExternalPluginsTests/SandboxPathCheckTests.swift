// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import ExternalPlugins
import PluginKit
import TestSupport

/// The checks made before a plugin starts under a uid of its own (issue 35 item 1): each names
/// the path in the way and the fix. Stat-based, so they run without root.
@Suite(.cleansUp) struct SandboxPathCheckTests {
    let root: String

    init() throws {
        root = try TestScope.required(by: "SandboxPathCheckTests").directory("appd-pathcheck")
        chmod(root, 0o755)
    }

    /// A uid that owns nothing here (the plugin's own).
    func check(visible: [String] = []) -> SandboxPathCheck {
        SandboxPathCheck(uid: 61_999, gid: 61_999, visible: ["/usr", "/etc", "/bin", "/lib", "/lib64"] + visible)
    }

    @Test func aFolderUnderAPrivateDirectoryIsNamedWithItsFix() throws {
        let home = root + "/home", venv = home + "/venv"
        try FileManager.default.createDirectory(atPath: venv, withIntermediateDirectories: true)
        chmod(home, 0o700)
        chmod(venv, 0o755)
        let problem = check(visible: [venv]).problem(folder: root, data: root + "/data/p", readOnly: [venv], executable: "/bin/true", environment: [])
        #expect(problem?.contains("its read-only path \(venv) is out of its reach: \(home) is 700") == true, "\(problem ?? "nil")")
        #expect(problem?.contains("move it out from under \(home)") == true)
        chmod(home, 0o711)
        #expect(check(visible: [venv]).problem(folder: root, data: root + "/p", readOnly: [venv], executable: "/bin/true", environment: []) == nil)
    }

    @Test func theDataFoldersParentsAndThePluginFolderAreChecked() throws {
        let data = root + "/data", folder = root + "/plugins/p"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chmod(root + "/plugins", 0o755)
        chmod(folder, 0o755)
        chmod(data, 0o700)
        let problem = check().problem(folder: folder, data: data + "/p", readOnly: [], executable: "/bin/true", environment: [])
        #expect(problem?.contains("its data folder \(data)/p is out of its reach: \(data) is 700") == true, "\(problem ?? "nil")")
        chmod(data, 0o711)
        chmod(folder, 0o700)
        let unreadable = check().problem(folder: folder, data: data + "/p", readOnly: [], executable: "/bin/true", environment: [])
        #expect(unreadable?.contains("its folder \(folder) is out of its reach") == true, "\(unreadable ?? "nil")")
    }

    @Test func anInterpreterOutsideWhatTheSandboxShowsIsRefused() throws {
        // A virtualenv whose python is a link to an interpreter elsewhere (pyenv's, say).
        let venv = root + "/venv", elsewhere = root + "/pyenv/versions/3.12/bin"
        try FileManager.default.createDirectory(atPath: venv + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: elsewhere + "/python3.12", contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755]))
        try FileManager.default.createSymbolicLink(atPath: venv + "/bin/python3", withDestinationPath: elsewhere + "/python3.12")
        let script = root + "/plugin.py"
        #expect(FileManager.default.createFile(atPath: script, contents: Data("#!/usr/bin/env python3\nprint()\n".utf8), attributes: [.posixPermissions: 0o755]))
        let env = ["PATH=\(venv)/bin:/usr/bin:/bin"]
        let problem = check(visible: [venv, root]).problem(folder: root, data: root + "/d", readOnly: [venv], executable: script, environment: env)
        // root is visible in this check (it is the plugin's folder): use a folder that excludes pyenv.
        #expect(problem == nil, "visible through the plugin's folder: \(problem ?? "")")
        let narrow = check(visible: [venv]).problem(folder: venv, data: root + "/d", readOnly: [venv], executable: script, environment: env)
        #expect(narrow?.contains("its interpreter \(venv)/bin/python3 is \(elsewhere)/python3.12, which the sandbox does not show") == true, "\(narrow ?? "nil")")
        #expect(narrow?.contains("/usr/bin/python3 -m venv") == true)
        // A PATH folder the sandbox does not show is skipped, as env inside would skip it.
        let skipped = check(visible: []).problem(folder: venv, data: root + "/d", readOnly: [], executable: script, environment: ["PATH=\(venv)/bin:/nonexistent"])
        #expect(skipped?.contains("is in none of the PATH folders") == true, "\(skipped ?? "nil")")
    }
}
