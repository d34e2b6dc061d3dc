; Java definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.

(package_declaration [(identifier) (scoped_identifier)] @name.package)

; --- types
(class_declaration name: (identifier) @name.definition.class) @definition.class
(interface_declaration name: (identifier) @name.definition.interface) @definition.interface
(enum_declaration name: (identifier) @name.definition.enum) @definition.enum
(record_declaration name: (identifier) @name.definition.record) @definition.record
(annotation_type_declaration name: (identifier) @name.definition.interface) @definition.interface

; --- methods and constructors (abstract and interface methods have no body: not definitions)
(method_declaration name: (identifier) @name.definition.method body: (block)) @definition.method
(constructor_declaration name: (identifier) @name.definition.constructor) @definition.constructor
(compact_constructor_declaration name: (identifier) @name.definition.constructor) @definition.constructor

; --- base classes and interfaces
(superclass (type_identifier) @name.reference.inherits) @reference.inherits
(superclass (generic_type (type_identifier) @name.reference.inherits)) @reference.inherits
(superclass (scoped_type_identifier (_) @receiver.reference.inherits . (type_identifier) @name.reference.inherits .)) @reference.inherits
(super_interfaces (type_list (type_identifier) @name.reference.inherits)) @reference.inherits
(super_interfaces (type_list (generic_type (type_identifier) @name.reference.inherits))) @reference.inherits
(super_interfaces (type_list (scoped_type_identifier (_) @receiver.reference.inherits . (type_identifier) @name.reference.inherits .))) @reference.inherits
(extends_interfaces (type_list (type_identifier) @name.reference.inherits)) @reference.inherits
(extends_interfaces (type_list (generic_type (type_identifier) @name.reference.inherits))) @reference.inherits

; --- calls
(method_invocation !object name: (identifier) @name.reference.call) @reference.call
(method_invocation object: _ @receiver.reference.call name: (identifier) @name.reference.call) @reference.call
(object_creation_expression type: (type_identifier) @name.reference.call) @reference.call
(object_creation_expression type: (generic_type (type_identifier) @name.reference.call)) @reference.call
(object_creation_expression
  type: (scoped_type_identifier (_) @receiver.reference.call . (type_identifier) @name.reference.call .)) @reference.call
(method_reference . (_) @receiver.reference.call . (identifier) @name.reference.call .) @reference.call

; --- imports
(import_declaration [(identifier) (scoped_identifier)] @module.reference.import) @reference.import
(import_declaration [(identifier) (scoped_identifier)] @module.reference.import (asterisk) @name.reference.import) @reference.import
